import { execFileSync } from "node:child_process";
import { cpus, release, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findNatsServer, type NatsServer } from "@statesync/node";
import type { Table } from "./format.js";

/** `bench/` (this file is `bench/dist/lib/harness.js` once built). */
export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The committed figures: written only with `--record`. */
export const RESULTS_DIR = join(BENCH_DIR, "results");
/** Where every run writes its figures, profiles and charts (git-ignored). */
export const OUT_DIR = join(BENCH_DIR, "out");

/**
 * What a benchmark gets: its own nats-server when `needsServer` (benchmarks that measure both
 * placements start their own, see `placement.ts`), a scratch dir.
 */
export interface BenchContext {
  /** The benchmark's own server (shared placement); undefined unless `needsServer`. */
  server: NatsServer | undefined;
  /** A temporary directory removed afterwards (snapshot files). */
  tmpDir: string;
  /** Multiplies durations and sizes: 1 normally, smaller with --quick. */
  scale: number;
  /** Numeric flags of the command line (`--followers 1000` → `{ followers: 1000 }`). */
  flags: Readonly<Record<string, number | undefined>>;
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
  /**
   * Parts that failed while the rest was measured (a placement, a round): each says what and
   * why. The summary marks the benchmark as partly failed.
   */
  failures?: string[];
  /** One line for scripts, printed as the last line of the whole run (JSON). */
  jsonLine?: string;
}

/** What `--cpu-prof` gets: where the child writes its `.cpuprofile`. */
export interface ProfileContext {
  /** Directory for the `.cpuprofile` (under `out/profiles`). */
  dir: string;
  tmpDir: string;
  scale: number;
  progress(message: string): void;
}

/** What a profiled run reports besides its profile: how many operations it did. */
export interface ProfileRun {
  /** What was profiled, e.g. "sync.update awaited, pinned". */
  what: string;
  /** Operations (updates, entries) in the profiled window, for CPU per operation. */
  ops: number;
  /** The `.cpuprofile` written. */
  file: string;
  /** Wall time of the profiled window, ms. */
  windowMs: number;
}

export interface Benchmark {
  name: string;
  title: string;
  /** False for engine-only benchmarks (MemoryLog): no server is started. */
  needsServer: boolean;
  run(ctx: BenchContext): Promise<BenchOutput>;
  /** The `jsonLine` to print when the whole benchmark failed (scripts still get one line). */
  failedJsonLine?(flags: BenchContext["flags"]): string;
  /**
   * `--cpu-prof`: runs only the statesync side under Node's CPU profiler (in a child process,
   * pinned like the figures that count) and says where the profile is.
   */
  profile?(ctx: ProfileContext): Promise<ProfileRun>;
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

/** An error as one line for reports: `CODE: message` for a StateSyncError, else the message. */
export function describeError(err: unknown, withStack = false): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const text = withStack ? (err.stack ?? err.message) : err.message;
  return typeof code === "string" ? `${code}: ${text}` : text;
}
