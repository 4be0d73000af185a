import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, release, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findNatsServer, startNatsServer, type NatsServer } from "@statesync/node";
import { markdownTable, textTable, type Table } from "./format.js";

/** `bench/` (this file is `bench/dist/lib/harness.js` once built). */
export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const RESULTS_DIR = join(BENCH_DIR, "results");

/** What a benchmark gets: its own nats-server (unless it runs on MemoryLog), a scratch dir. */
export interface BenchContext {
  /** The benchmark's own server; undefined for engine-only benchmarks. */
  server: NatsServer | undefined;
  /** A temporary directory removed afterwards (snapshot files). */
  tmpDir: string;
  /** Multiplies durations and sizes: 1 normally, smaller with --quick. */
  scale: number;
  /** Progress output (stderr, so stdout keeps the tables). */
  progress(message: string): void;
}

/** A target from the issue, evaluated on figures of the same run. */
export interface Target {
  name: string;
  /** The measured ratio (or figure). */
  value: number;
  comparison: ">=" | "<=";
  threshold: number;
  met: boolean;
  /** How the value was computed, with the figures. */
  detail: string;
}

/** One compact line for `results/summary.md` and the main README. */
export interface SummaryRow {
  figure: string;
  value: string;
  reference?: string;
  ratio?: string;
}

export interface BenchOutput {
  tables: Array<{ title: string; table: Table; note?: string }>;
  summary: SummaryRow[];
  targets: Target[];
  /** Raw figures, written to the JSON file. */
  data: unknown;
  charts?: Array<{ file: string; svg: string }>;
}

export interface Benchmark {
  name: string;
  title: string;
  /** False for engine-only benchmarks (MemoryLog): no server is started. */
  needsServer: boolean;
  run(ctx: BenchContext): Promise<BenchOutput>;
}

export function target(
  name: string,
  value: number,
  comparison: ">=" | "<=",
  threshold: number,
  detail: string,
): Target {
  const met = comparison === ">=" ? value >= threshold : value <= threshold;
  return { name, value, comparison, threshold, met, detail };
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  natsServer: string;
}

let machineCache: Machine | undefined;
export function machine(): Machine {
  if (machineCache) return machineCache;
  let natsServer = "unknown";
  try {
    natsServer = execFileSync(findNatsServer(), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    // reported as unknown
  }
  machineCache = {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${process.platform} ${release()}`,
    node: process.version,
    natsServer,
  };
  return machineCache;
}

let streamCounter = 0;
/** A stream name unique within this process. */
export function uniqueStream(prefix: string): string {
  streamCounter += 1;
  return `${prefix}_${Date.now().toString(36)}_${streamCounter}`;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const now = () => performance.now();

/** Runs a benchmark with its own server and scratch dir, prints and records its results. */
export async function runBenchmark(bench: Benchmark, scale: number): Promise<BenchOutput> {
  const started = Date.now();
  const progress = (message: string) => process.stderr.write(`  [${bench.name}] ${message}\n`);
  const tmpDir = await mkdtemp(join(tmpdir(), `statesync-bench-${bench.name}-`));
  let server: NatsServer | undefined;
  try {
    if (bench.needsServer) {
      server = await startNatsServer();
      progress(`nats-server on ${server.url} (ws ${server.wsUrl})`);
    }
    const out = await bench.run({ server, tmpDir, scale, progress });
    const durationMs = Date.now() - started;
    print(bench, out, durationMs);
    await record(bench, out, durationMs, scale);
    return out;
  } finally {
    await server?.stop();
    await rm(tmpDir, { recursive: true, force: true });
  }
}

function print(bench: Benchmark, out: BenchOutput, durationMs: number): void {
  const lines: string[] = ["", `== ${bench.title} (${(durationMs / 1000).toFixed(1)} s)`];
  for (const t of out.tables) {
    lines.push("", t.title, textTable(t.table));
    if (t.note) lines.push(t.note);
  }
  if (out.targets.length > 0) {
    lines.push("", "targets:");
    for (const t of out.targets) {
      lines.push(
        `  ${t.met ? "MET   " : "MISSED"} ${t.name}: ${t.value.toFixed(3)} ${t.comparison} ${t.threshold} (${t.detail})`,
      );
    }
  }
  process.stdout.write(lines.join("\n") + "\n");
}

async function record(
  bench: Benchmark,
  out: BenchOutput,
  durationMs: number,
  scale: number,
): Promise<void> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = {
    name: bench.name,
    title: bench.title,
    date: new Date().toISOString(),
    durationMs,
    scale,
    machine: machine(),
    tables: out.tables,
    summary: out.summary,
    targets: out.targets,
    data: out.data,
    charts: (out.charts ?? []).map((c) => c.file),
  };
  await writeFile(join(RESULTS_DIR, `${bench.name}.json`), JSON.stringify(file, null, 2) + "\n");
  for (const chart of out.charts ?? []) await writeFile(join(RESULTS_DIR, chart.file), chart.svg);
}

interface RecordedFile {
  name: string;
  title: string;
  date: string;
  scale: number;
  machine: Machine;
  summary: SummaryRow[];
  targets: Target[];
  tables: Array<{ title: string; table: Table; note?: string }>;
  charts: string[];
}

/** Reads every recorded result, in the order of `order`. */
export async function readResults(order: string[]): Promise<RecordedFile[]> {
  let names: string[] = [];
  try {
    names = (await readdir(RESULTS_DIR)).filter((f) => f.endsWith(".json"));
  } catch {
    return [];
  }
  const files: RecordedFile[] = [];
  for (const n of names) {
    files.push(JSON.parse(await readFile(join(RESULTS_DIR, n), "utf8")) as RecordedFile);
  }
  const rank = (n: string) => (order.includes(n) ? order.indexOf(n) : order.length);
  return files.sort((a, b) => rank(a.name) - rank(b.name));
}

/** Writes `results/summary.md`: one compact table of every recorded benchmark, then targets. */
export async function writeSummary(order: string[]): Promise<string> {
  const files = await readResults(order);
  const rows: string[][] = [];
  for (const f of files) {
    for (const r of f.summary) {
      rows.push([f.name, r.figure, r.value, r.reference ?? "", r.ratio ?? ""]);
    }
  }
  const targets: string[][] = [];
  for (const f of files) {
    for (const t of f.targets) {
      targets.push([
        t.name,
        `${t.comparison} ${t.threshold}`,
        t.value < 0.1 ? t.value.toFixed(3) : t.value.toFixed(2),
        t.met ? "met" : "**missed**",
      ]);
    }
  }
  const m = files[0]?.machine ?? machine();
  const dates = files.map((f) => f.date).sort();
  const quick = files.some((f) => f.scale !== 1);
  const text = [
    "<!-- generated by `npm run bench`; do not edit -->",
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}; ${m.natsServer}` +
      ` (client and server on the same machine). Runs ${dates[0]?.slice(0, 16) ?? ""}` +
      `${dates.length > 1 ? ` to ${dates[dates.length - 1]!.slice(0, 16)}` : ""} UTC` +
      `${quick ? " (**--quick**: shortened runs)" : ""}.`,
    "",
    markdownTable(
      {
        headers: ["benchmark", "figure", "statesync", "reference", "ratio"],
        rows,
      },
      2,
    ),
    "",
    markdownTable({ headers: ["target", "wanted", "measured", ""], rows: targets }),
    "",
  ].join("\n");
  await writeFile(join(RESULTS_DIR, "summary.md"), text);
  return text;
}
