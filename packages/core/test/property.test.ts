import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryLog, stateHash } from "@statesync/core";
import { open } from "./fixtures.js";

type Op =
  | { kind: "cond"; by: number }
  | { kind: "recipe"; item: string }
  | { kind: "uncond"; by: number }
  | { kind: "loseAck" }
  | { kind: "fetch" }
  | { kind: "compact" }
  | { kind: "pause"; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("cond" as const), by: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant("recipe" as const), item: fc.string({ maxLength: 4 }) }),
  fc.record({ kind: fc.constant("uncond" as const), by: fc.integer({ min: 1, max: 5 }) }),
  fc.constant({ kind: "loseAck" as const }),
  fc.constant({ kind: "fetch" as const }),
  fc.constant({ kind: "compact" as const }),
  fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 3 }) }),
);

describe("random schedules on MemoryLog (fast-check)", () => {
  it("end with identical replicas and no lost increment, compactions included", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 2, maxLength: 4 }),
        fc.boolean(),
        fc.boolean(),
        async (schedules, expectedFirst, someNotLive) => {
          const log = new MemoryLog({
            duplicateCheck: expectedFirst ? "expected-first" : "dedupe-first",
          });
          const clients = await Promise.all(
            schedules.map((_, i) =>
              open(log, { clientId: `c${i}`, live: !(someNotLive && i === 0) }),
            ),
          );
          let expectedCount = 0;
          const expectedItems: string[] = [];
          await Promise.all(
            schedules.map(async (ops, i) => {
              const c = clients[i]!;
              const inFlight: Promise<unknown>[] = [];
              for (const op of ops) {
                if (op.kind === "cond") {
                  expectedCount += op.by;
                  inFlight.push(c.update("increment", { by: op.by }));
                } else if (op.kind === "recipe") {
                  expectedItems.push(op.item);
                  inFlight.push(c.update((d) => void d.items.push(op.item)));
                } else if (op.kind === "uncond") {
                  expectedCount += op.by;
                  inFlight.push(c.updateUnconditionally("increment", { by: op.by }));
                } else if (op.kind === "loseAck") log.loseNextAcks(1);
                else if (op.kind === "fetch") await c.fetchUpdates();
                else if (op.kind === "compact") inFlight.push(c.compact());
                else await new Promise((r) => setTimeout(r, op.ms));
              }
              await Promise.all(inFlight);
            }),
          );
          const latest = (await log.info()).latestRevision;
          await Promise.all(clients.map((c) => c.synced()));
          const late = await open(log, { clientId: "late" });
          clients.push(late);
          for (const c of clients) expect(c.revision).toBe(latest);
          const hashes = new Set(clients.map((c) => stateHash(c.state)));
          expect(hashes.size).toBe(1);
          expect(clients[0]!.state.count).toBe(expectedCount);
          expect([...clients[0]!.state.items].sort()).toEqual([...expectedItems].sort());
          await Promise.all(clients.map((c) => c.close()));
        },
      ),
      { numRuns: 60 },
    );
  });
});
