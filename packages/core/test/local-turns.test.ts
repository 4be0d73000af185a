import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { LocalTurns, TURN_LEASE_MS, type LocalTurn } from "../src/engine/local-turns.js";
import { ENDED } from "../src/engine/wait-limits.js";
import { open } from "./fixtures.js";

const forever = { deadline: Infinity, signal: new AbortController().signal };

describe("local turns (engine/local-turns.ts)", () => {
  it("gives the turn first come first served; a wait that ended leaves the line", async () => {
    const turns = new LocalTurns(() => "log-1");
    const order: string[] = [];
    const first = (await turns.take(forever)) as LocalTurn;
    const aborted = new AbortController();
    const b = turns.take(forever).then((t) => (order.push("b"), t));
    const c = turns.take({ deadline: Infinity, signal: aborted.signal });
    const d = turns.take(forever).then((t) => (order.push("d"), t));
    aborted.abort();
    expect(await c).toBe(ENDED);
    first.done(5);
    const tb = (await b) as LocalTurn;
    expect(tb.latest).toBe(5); // what the turn before committed
    expect(order).toEqual(["b"]);
    tb.done();
    const td = (await d) as LocalTurn;
    expect(order).toEqual(["b", "d"]);
    td.done();
    // Another log has its own line; no identity yet: no turn to wait for.
    const other = new LocalTurns(() => "log-2");
    const held = (await turns.take(forever)) as LocalTurn;
    expect(await other.take({ deadline: Date.now(), signal: forever.signal })).not.toBe(ENDED);
    expect((await new LocalTurns(() => undefined).take(forever)) as LocalTurn).toBeDefined();
    held.done();
  });

  it("passes a turn on after the lease when its writer does not answer", async () => {
    const turns = new LocalTurns(() => "log-3");
    const stuck = (await turns.take(forever)) as LocalTurn;
    const next = turns.take({ deadline: Date.now() + 5 * TURN_LEASE_MS, signal: forever.signal });
    expect(await next).not.toBe(ENDED);
    (next as unknown as Promise<LocalTurn>).then((t) => t.done());
    stuck.done(); // late: passes nothing twice
  });

  it("two writers of one process never conflict with each other, and both make progress", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    const b = await open(log.handle(), { clientId: "b", compaction: false });
    const loop = async (s: typeof a) => {
      let attempts = 0;
      for (let i = 0; i < 100; i++)
        attempts += (await s.update((d) => void (d.count += 1))).attempts;
      return attempts;
    };
    const [ra, rb] = await Promise.all([loop(a), loop(b)]);
    // Before, each commit of one made the other's attempt on the same revision conflict.
    expect(ra + rb).toBe(200);
    await a.synced();
    expect(a.state.count).toBe(200);
    await Promise.all([a.close(), b.close()]);
  });
});
