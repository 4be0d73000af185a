import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { runSchedule } from "./run.js";
import { formatSchedule, makeSchedule } from "./schedule.js";

/**
 * A seeded, randomized whole-system check (Jepsen-style). Each seed draws a schedule (schedule.ts)
 * of 3-5 replicas of one ledger state, each with its own snapshot directory and TCP proxy, doing
 * conditional updates (a named command or a recipe), unconditional commands, `compact()`, and
 * close-and-reopen from their snapshots, while their connections are cut or paused and
 * nats-server is SIGKILLed and restarted on its store. Every update carries a unique id that the
 * state records. After the faults stop and every replica is open and settled (with a late
 * replica that reads the whole log), the history checker (support/checker.ts) asserts:
 * convergence (one revision, one state), every resolved update applied exactly once, no update
 * rejected with a "nothing appended" code applied (outcome.ts), an unknown outcome applied at
 * most once, one state per revision across every replica's `subscribe` notifications, and no
 * replica's revision going back (closes and reopens included).
 *
 * `STATESYNC_CHAOS_SEED=<n>` replays one seed; `STATESYNC_CHAOS_RUNS=<n>` runs n seeds (a soak,
 * drawn from `STATESYNC_CHAOS_SEED` or the clock); otherwise the CI seeds below. A failure
 * prints its seed, schedule and trace (`STATESYNC_CHAOS_TRACE=1` prints them for every run).
 */
// Each with a server restart: 5 with two, 7 with six lost acknowledgements. Two seeds keep the
// test command within its time (about 6-12 s per seed per server here); soaks run many more
// (341 seeds on both servers when the check was written: no violation).
const CI_SEEDS = [5, 7];
const RUNS = Number(process.env.STATESYNC_CHAOS_RUNS ?? 0);
const SEED = process.env.STATESYNC_CHAOS_SEED;

function seeds(): number[] {
  if (RUNS > 0) {
    const base = SEED === undefined ? Date.now() % 1_000_000 : Number(SEED);
    return Array.from({ length: RUNS }, (_, i) => base + i);
  }
  return SEED === undefined ? CI_SEEDS : [Number(SEED)];
}

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

describe("chaos: random schedules of updates, compactions, reopens and faults", () => {
  const list = seeds();
  it(
    `keeps every guarantee on seeds ${list.length > 5 ? `${list[0]}..${list.at(-1)}` : list.join(", ")}`,
    { timeout: 120_000 + list.length * 60_000 },
    async () => {
      const totals = { runs: 0, operations: 0, ok: 0 };
      const failed: number[] = [];
      for (const seed of list) {
        const schedule = makeSchedule(seed);
        const result = await runSchedule(server, schedule);
        totals.runs += 1;
        totals.operations += result.operations;
        totals.ok += result.summary.ok ?? 0;
        const line = `chaos seed ${seed}: ${schedule.steps.length} steps, ${result.operations} updates ${JSON.stringify(result.summary)}, final revision ${result.finalRevision}`;
        if (RUNS > 0) console.log(line);
        if (result.violations.length > 0 || process.env.STATESYNC_CHAOS_TRACE) {
          console.log(
            [
              `${result.violations.length > 0 ? "CHAOS VIOLATION" : "chaos trace"} (replay: STATESYNC_CHAOS_SEED=${seed})`,
              line,
              ...result.violations.map((v) => `- ${v}`),
              formatSchedule(schedule),
              "trace:",
              ...result.trace,
            ].join("\n"),
          );
        }
        if (result.violations.length > 0) failed.push(seed);
        // A soak goes on after a failure, to find more; otherwise the first one ends the test.
        if (RUNS === 0) {
          expect(result.violations, `seed ${seed} (replay: STATESYNC_CHAOS_SEED=${seed})`).toEqual(
            [],
          );
        }
      }
      if (RUNS > 0) {
        console.log(
          `chaos totals: ${JSON.stringify(totals)}; failed seeds: ${failed.join(", ") || "none"}`,
        );
      }
      expect(failed, "seeds with violations (replay each with STATESYNC_CHAOS_SEED)").toEqual([]);
    },
  );
});
