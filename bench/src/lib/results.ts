import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { markdownTable, textTable, type Table } from "./format.js";
import {
  BENCH_DIR,
  describeError,
  machine,
  OUT_DIR,
  RESULTS_DIR,
  type BenchContext,
  type Benchmark,
  type BenchOutput,
  type Machine,
  type SummaryRow,
  type Target,
} from "./harness.js";

/** How one benchmark ended: measured (maybe partly), or failed as a whole with the reason. */
export type Outcome =
  { name: string; ok: true; out: BenchOutput } | { name: string; ok: false; error: string };

/**
 * Runs a benchmark with its own scratch dir (and server when it asks for one), prints its
 * tables and writes `out/<name>.json`. Never throws: a failing benchmark prints why, is recorded
 * as failed, and the next one runs.
 */
export async function runBenchmark(
  bench: Benchmark,
  scale: number,
  flags: BenchContext["flags"] = {},
): Promise<Outcome> {
  const started = Date.now();
  const progress = (message: string) => process.stderr.write(`  [${bench.name}] ${message}\n`);
  let tmpDir: string | undefined;
  let server: NatsServer | undefined;
  try {
    tmpDir = await mkdtemp(join(tmpdir(), `statesync-bench-${bench.name}-`));
    if (bench.needsServer) {
      server = await startNatsServer();
      progress(`nats-server on ${server.url} (ws ${server.wsUrl})`);
    }
    const out = await bench.run({ server, tmpDir, scale, flags, progress });
    const durationMs = Date.now() - started;
    print(bench, out, durationMs);
    await writeOut(bench, { ...fileHead(bench, durationMs, scale), ...body(out) }, out);
    return { name: bench.name, ok: true, out };
  } catch (err) {
    const error = describeError(err, true);
    const durationMs = Date.now() - started;
    process.stdout.write(`\n== ${bench.title}: FAILED after ${(durationMs / 1000).toFixed(1)} s\n`);
    process.stdout.write(`${error}\n`);
    await writeOut(bench, { ...fileHead(bench, durationMs, scale), failed: error }).catch(
      () => undefined,
    );
    return { name: bench.name, ok: false, error };
  } finally {
    await server?.stop().catch(() => undefined);
    if (tmpDir) await rm(tmpDir, { recursive: true, force: true });
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
        `  ${t.met ? "MET   " : "MISSED"} ${t.name}: ${formatValue(t.value)} ${t.comparison} ${t.threshold} (${t.detail})`,
      );
    }
  }
  for (const f of out.failures ?? []) lines.push(`  FAILED part: ${f}`);
  process.stdout.write(lines.join("\n") + "\n");
}

function formatValue(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) < 0.1 ? v.toFixed(3) : v.toFixed(2);
}

/** One recorded result file (`out/<name>.json`, and `results/<name>.json` with `--record`). */
interface RecordedFile {
  name: string;
  title: string;
  date: string;
  durationMs: number;
  scale: number;
  machine: Machine;
  summary: SummaryRow[];
  targets: Target[];
  tables: Array<{ title: string; table: Table; note?: string }>;
  charts: string[];
  data?: unknown;
  failures?: string[];
  /** Set when the whole benchmark failed: the error. */
  failed?: string;
}

function fileHead(bench: Benchmark, durationMs: number, scale: number) {
  return {
    name: bench.name,
    title: bench.title,
    date: new Date().toISOString(),
    durationMs,
    scale,
    machine: machine(),
    tables: [],
    summary: [],
    targets: [],
    charts: [],
  };
}

function body(out: BenchOutput) {
  return {
    tables: out.tables,
    summary: out.summary,
    targets: out.targets,
    data: out.data,
    charts: (out.charts ?? []).map((c) => c.file),
    ...(out.failures && out.failures.length > 0 ? { failures: out.failures } : {}),
  };
}

async function writeOut(bench: Benchmark, file: RecordedFile, out?: BenchOutput): Promise<void> {
  await mkdir(OUT_DIR, { recursive: true });
  await writeFile(join(OUT_DIR, `${bench.name}.json`), JSON.stringify(file, null, 2) + "\n");
  for (const chart of out?.charts ?? []) await writeFile(join(OUT_DIR, chart.file), chart.svg);
}

/** Reads every result file of `dir`, in the order of `order`. */
async function readResults(dir: string, order: string[]): Promise<RecordedFile[]> {
  let names: string[] = [];
  try {
    names = (await readdir(dir)).filter((f) => f.endsWith(".json"));
  } catch {
    return [];
  }
  const files: RecordedFile[] = [];
  for (const n of names) {
    const f = JSON.parse(await readFile(join(dir, n), "utf8")) as RecordedFile;
    if (order.includes(f.name)) files.push(f);
  }
  const rank = (n: string) => order.indexOf(n);
  return files.sort((a, b) => rank(a.name) - rank(b.name));
}

/**
 * The summary of the result files in `dir` (those of `only`, when given): one table of figures,
 * one of targets, and the benchmarks that failed in whole or in part.
 */
export async function summarize(dir: string, order: string[], only?: string[]): Promise<string> {
  const files = (await readResults(dir, order)).filter((f) => !only || only.includes(f.name));
  const rows: string[][] = [];
  const targets: string[][] = [];
  const failed: string[] = [];
  for (const f of files) {
    if (f.failed !== undefined) {
      failed.push(`- **${f.name} FAILED**: ${f.failed.split("\n")[0]}`);
      continue;
    }
    for (const r of f.summary)
      rows.push([f.name, r.figure, r.value, r.reference ?? "", r.ratio ?? ""]);
    for (const t of f.targets) {
      targets.push([
        t.name,
        `${t.comparison} ${t.threshold}`,
        formatValue(t.value),
        t.met ? "met" : "**missed**",
      ]);
    }
    for (const x of f.failures ?? [])
      failed.push(`- **${f.name} partly failed**: ${x.split("\n")[0]}`);
  }
  const m = files[0]?.machine ?? machine();
  const dates = files.map((f) => f.date).sort();
  const quick = files.some((f) => f.scale !== 1);
  return [
    "<!-- generated by `npm run bench`; do not edit -->",
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}; ${m.natsServer}` +
      ` (client and server on the same machine). Runs ${dates[0]?.slice(0, 16) ?? ""}` +
      `${dates.length > 1 ? ` to ${dates[dates.length - 1]!.slice(0, 16)}` : ""} UTC` +
      `${quick ? " (**--quick**: shortened runs)" : ""}.`,
    "",
    markdownTable({ headers: ["benchmark", "figure", "statesync", "reference", "ratio"], rows }, 2),
    "",
    markdownTable({ headers: ["target", "wanted", "measured", ""], rows: targets }),
    "",
    ...(failed.length > 0 ? [...failed, ""] : []),
  ].join("\n");
}

/** Writes `out/summary.md` for the benchmarks of this run; returns its text. */
export async function writeOutSummary(order: string[], ran: string[]): Promise<string> {
  const text = await summarize(OUT_DIR, order, ran);
  await writeFile(join(OUT_DIR, "summary.md"), text);
  return text;
}

const README_BEGIN = "<!-- results:begin -->";
const README_END = "<!-- results:end -->";

/**
 * `--record`: copies the result files (and charts) of the benchmarks that ran without failing
 * from `out/` to the committed `results/`, rewrites `results/summary.md` from every committed
 * file, and puts that summary into `bench/README.md` between the results markers.
 */
export async function record(order: string[], outcomes: Outcome[]): Promise<string[]> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const copied: string[] = [];
  for (const o of outcomes) {
    if (!o.ok) continue;
    await copyFile(join(OUT_DIR, `${o.name}.json`), join(RESULTS_DIR, `${o.name}.json`));
    for (const chart of o.out.charts ?? []) {
      await copyFile(join(OUT_DIR, chart.file), join(RESULTS_DIR, chart.file));
    }
    copied.push(o.name);
  }
  const text = await summarize(RESULTS_DIR, order);
  await writeFile(join(RESULTS_DIR, "summary.md"), text);
  const readmePath = join(BENCH_DIR, "README.md");
  const readme = await readFile(readmePath, "utf8");
  const a = readme.indexOf(README_BEGIN);
  const b = readme.indexOf(README_END);
  if (a >= 0 && b > a) {
    const inner = text.replace(/^<!--.*-->\n/, "");
    await writeFile(
      readmePath,
      `${readme.slice(0, a + README_BEGIN.length)}\n${inner}${readme.slice(b)}`,
    );
  }
  return copied;
}
