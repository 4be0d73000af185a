import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { apply } from "./apply.js";
import { chunked } from "./chunked.js";
import { coldStart } from "./cold-start.js";
import { contention } from "./contention.js";
import { fanout } from "./fanout.js";
import { largeState } from "./large-state.js";
import { num } from "./lib/format.js";
import { BENCH_DIR, OUT_DIR, type Benchmark } from "./lib/harness.js";
import { selfTimes, type CpuProfile } from "./lib/profiler.js";
import { record, runBenchmark, writeOutSummary, type Outcome } from "./lib/results.js";
import { propagation } from "./propagation.js";
import { singleWriter } from "./single-writer.js";
import { unconditional } from "./unconditional.js";

const BENCHMARKS: Benchmark[] = [
  singleWriter,
  contention,
  unconditional,
  coldStart,
  propagation,
  apply,
  largeState,
  fanout,
  chunked,
];
const ORDER = BENCHMARKS.map((b) => b.name);

const USAGE = `usage: npm run bench -- [names or numbers] [--quick] [--record] [--cpu-prof <name>]
  --quick            shorter runs and smaller sizes (a smoke test of a few minutes)
  --followers N      fanout: live followers (default 200; raise \`ulimit -n\` first)
  --consumers M      fanout: followers of the consumer-per-follower comparison (default min(N, 500))
  --seconds S        fanout: seconds of writing (default 30, 10 with --quick)
  --ws-followers W   fanout: also W fan-out followers over WebSocket (nats.ws in Node; default 0)
  --raw 0            fanout: leave out the raw reference (plain core subscribers; default 1: run it)
  --record           also copy the figures to bench/results/ and the README (committed)
  --cpu-prof <name>  profile the statesync side of one benchmark (${BENCHMARKS.filter(
    (b) => b.profile,
  )
    .map((b) => b.name)
    .join(", ")}) instead of measuring
benchmarks: ${BENCHMARKS.map((b, i) => `${i + 1}/${b.name}`).join(", ")}
`;

function pick(name: string): Benchmark | undefined {
  return BENCHMARKS.find((b, i) => b.name === name || String(i + 1) === name);
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const flags = new Set(["--quick", "--record", "--cpu-prof", "--help"]);
  const valued = new Set(["--followers", "--consumers", "--seconds", "--ws-followers", "--raw"]);
  const numeric: Record<string, number | undefined> = {};
  const valueAt = new Set<number>();
  const bad: string[] = [];
  args.forEach((a, i) => {
    if (!valued.has(a)) return;
    const v = Number(args[i + 1]);
    if (!Number.isSafeInteger(v) || v < 0) bad.push(`${a} ${args[i + 1] ?? ""}`);
    numeric[a.slice(2)] = v;
    valueAt.add(i + 1);
  });
  bad.push(...args.filter((a) => a.startsWith("--") && !flags.has(a) && !valued.has(a)));
  const profIndex = args.indexOf("--cpu-prof");
  const profName = profIndex >= 0 ? args[profIndex + 1] : undefined;
  const names = args.filter(
    (a, i) => !a.startsWith("--") && !(profIndex >= 0 && i === profIndex + 1) && !valueAt.has(i),
  );
  const unknown = names.filter((n) => !pick(n));
  if (
    args.includes("--help") ||
    bad.length > 0 ||
    unknown.length > 0 ||
    (profIndex >= 0 && !profName)
  ) {
    if (bad.length + unknown.length > 0)
      process.stderr.write(`unknown: ${[...bad, ...unknown].join(", ")}\n`);
    process.stderr.write(USAGE);
    return 2;
  }
  const scale = args.includes("--quick") ? 0.3 : 1;
  if (args.includes("--record") && scale !== 1) {
    process.stderr.write("--record keeps full runs only: run without --quick\n");
    return 2;
  }
  if (profName !== undefined) return profile(profName, scale);

  const selected =
    names.length === 0
      ? BENCHMARKS
      : BENCHMARKS.filter((b, i) => names.includes(b.name) || names.includes(String(i + 1)));
  const started = Date.now();
  const outcomes: Outcome[] = [];
  for (const bench of selected) outcomes.push(await runBenchmark(bench, scale, numeric));
  const summary = await writeOutSummary(
    ORDER,
    selected.map((b) => b.name),
  );
  process.stdout.write(
    `\n== summary (${relative(process.cwd(), join(OUT_DIR, "summary.md"))})\n${summary}`,
  );
  if (args.includes("--record")) {
    const copied = await record(ORDER, outcomes);
    process.stdout.write(
      `\nrecorded ${copied.join(", ") || "nothing"} into bench/results/ and bench/README.md\n`,
    );
  }
  const failed = outcomes.filter((o) => !o.ok).map((o) => o.name);
  if (failed.length > 0) process.stdout.write(`\nFAILED: ${failed.join(", ")}\n`);
  process.stdout.write(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  // A benchmark's line for scripts comes last (fanout's JSON), also when it failed.
  for (const o of outcomes) {
    const line = o.ok ? o.out.jsonLine : pick(o.name)?.failedJsonLine?.(numeric);
    if (line !== undefined) process.stdout.write(`${line}\n`);
  }
  return failed.length > 0 ? 1 : 0;
}

/** `--cpu-prof <name>`: profiles the statesync side and prints the top self-time functions. */
async function profile(name: string, scale: number): Promise<number> {
  const bench = pick(name);
  if (!bench?.profile) {
    process.stderr.write(`no profile for ${name}\n${USAGE}`);
    return 2;
  }
  const dir = join(OUT_DIR, "profiles");
  await mkdir(dir, { recursive: true });
  const tmpDir = await mkdtemp(join(tmpdir(), `statesync-bench-prof-`));
  try {
    const progress = (m: string) => process.stderr.write(`  [${bench.name}] ${m}\n`);
    const run = await bench.profile({ dir, tmpDir, scale, progress });
    const prof = JSON.parse(await readFile(run.file, "utf8")) as CpuProfile;
    const { busyMs, idleMs, top } = selfTimes(prof);
    const lines = [
      "",
      `== CPU profile of ${bench.name}: ${run.what}`,
      `profile: bench/${relative(BENCH_DIR, run.file)} (open in Chrome DevTools or VS Code)`,
      `${num(run.ops, 0)} operations in ${num(run.windowMs)} ms; main thread busy ${num(busyMs)} ms, idle ${num(idleMs)} ms`,
      `busy CPU per operation: ${num((busyMs * 1000) / Math.max(1, run.ops), 1)} µs`,
      "",
      "self ms   share  µs/op  function",
      ...top
        .slice(0, 30)
        .map(
          (t) =>
            `${num(t.ms, 1).padStart(8)}  ${(t.share * 100).toFixed(1).padStart(5)}%  ${num((t.ms * 1000) / Math.max(1, run.ops), 2).padStart(5)}  ${t.fn}`,
        ),
    ];
    process.stdout.write(lines.join("\n") + "\n");
    return 0;
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
