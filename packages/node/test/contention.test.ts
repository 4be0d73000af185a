import { z } from "zod/v4";
import { defineModel, openSynchronizer, type StateSynchronizer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "./helpers.js";

const counter = defineModel({
  name: "contention-counter",
  state: z.object({ n: z.number().int() }),
  initial: { n: 0 },
  commands: {
    inc: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
      },
    },
  },
});

/**
 * Issue 8: two replicas in one Node process, each awaiting `update("inc")` in a loop, let one
 * writer lose nearly every race (the winner learns of its commit from the acknowledgement and
 * appends again before the other's follower delivers it; replicas of one process are served in
 * a fixed event-loop order): an update needed 62 attempts, another failed with RETRY_LIMIT.
 * Outcomes only: every update commits, none takes more attempts than the bound, nothing is lost.
 */
describe("writers in one process do not starve (real nats-server)", () => {
  const ctx = useNatsServer();

  async function loop(writers: number, each: number) {
    const stream = uniqueStream("CONTEND");
    const syncs: StateSynchronizer<{ n: number }>[] = [];
    for (let i = 0; i < writers; i++) {
      syncs.push(
        await openSynchronizer({
          servers: ctx.server.url,
          stream,
          model: counter,
          snapshots: false,
        }),
      );
    }
    const attempts: number[][] = syncs.map(() => []);
    await Promise.all(
      syncs.map(async (s, i) => {
        for (let k = 0; k < each; k++) attempts[i]!.push((await s.update("inc", {})).attempts);
      }),
    );
    await Promise.all(syncs.map((s) => s.synced()));
    const states = syncs.map((s) => s.state.n);
    await Promise.all(syncs.map((s) => s.close()));
    return { attempts, states, max: Math.max(...attempts.flat()) };
  }

  it("two writers: every update commits within 6 attempts, both replicas count all", async () => {
    const { attempts, states, max } = await loop(2, 1_500);
    expect(attempts.map((a) => a.length)).toEqual([1_500, 1_500]);
    expect(states).toEqual([3_000, 3_000]);
    expect(max).toBeLessThanOrEqual(6);
  });

  it("four writers: every update commits within 16 attempts", async () => {
    const { states, max } = await loop(4, 250);
    expect(states).toEqual([1_000, 1_000, 1_000, 1_000]);
    expect(max).toBeLessThanOrEqual(16);
  });
});
