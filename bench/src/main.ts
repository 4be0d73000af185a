import { runBenchmark, writeSummary, type Benchmark } from "./lib/harness.js";
import { apply } from "./apply.js";
import { coldStart } from "./cold-start.js";
import { contention } from "./contention.js";
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
];
const ORDER = BENCHMARKS.map((b) => b.name);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes("--quick");
  const names = args.filter((a) => !a.startsWith("--"));
  const unknown = names.filter(
    (n) => !BENCHMARKS.some((b, i) => b.name === n || String(i + 1) === n),
  );
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown benchmark(s): ${unknown.join(", ")}; choose from ${BENCHMARKS.map((b, i) => `${i + 1}/${b.name}`).join(", ")}\n`,
    );
    process.exit(2);
  }
  const selected =
    names.length === 0
      ? BENCHMARKS
      : BENCHMARKS.filter((b, i) => names.includes(b.name) || names.includes(String(i + 1)));
  const started = Date.now();
  for (const bench of selected) await runBenchmark(bench, quick ? 0.3 : 1);
  const summary = await writeSummary(ORDER);
  process.stdout.write(`\n== summary (bench/results/summary.md)\n${summary}`);
  process.stdout.write(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
