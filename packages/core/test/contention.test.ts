import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

const enc = (o: unknown) => JSON.stringify(o);
const intent = (client: string) => enc({ v: 1, kind: "intent", ts: 1, client });
const increment = (client: string) =>
  enc({ v: 1, kind: "command", ts: 1, seed: 1, client, name: "increment", args: { by: 10 } });

describe("contention: intents (engine/contention.ts)", () => {
  it("a writer that conflicted three times announces itself with an intent, then commits", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    let runs = 0;
    // Another program appends before each of the first three attempts: three conflicts.
    const result = await a.update((d) => {
      if (runs++ < 3) log.injectRaw(increment("other"));
      d.count += 1;
      return runs;
    });
    expect(result.attempts).toBe(4);
    const kinds = (await a.history()).map((h) => `${h.kind}:${h.clientId}`);
    expect(kinds).toEqual([
      "genesis:a",
      "command:other",
      "command:other",
      "command:other",
      "intent:a",
      "update:a",
    ]);
    expect(a.state.count).toBe(31);
    expect(a.errors).toEqual([]);
    await a.close();
  });

  it("holds its conditional appends back while another writer's intent is outstanding", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    const held = log.injectRaw(intent("b"));
    await a.waitFor(held);
    const pending = a.update("increment", { by: 1 });
    await new Promise((r) => setTimeout(r, 30));
    expect(log.size).toBe(2); // nothing appended while b's intent holds a back
    const bCommits = log.injectRaw(increment("b"));
    const result = await pending;
    expect(result.revision).toBe(bCommits + 1); // after b's update, not before it
    expect(result.attempts).toBe(1);
    expect(a.state.count).toBe(11);
    await a.close();
  });

  it("an intent whose writer never commits holds nobody back for long", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    await a.waitFor(log.injectRaw(intent("gone")));
    const result = await a.update("increment", { by: 1 });
    expect(result.revision).toBe(3);
    expect(a.state.count).toBe(1);
    await a.close();
  });

  it("intents are no-ops every replica consumes alike, also when replaying history", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    log.injectRaw(intent("x"));
    await a.update("increment", { by: 2 });
    const late = await open(log, { clientId: "late", compaction: false });
    expect(late.state).toEqual(a.state);
    expect(late.revision).toBe(a.revision);
    expect(await a.stateAt(2)).toEqual({ count: 0, items: [], log: [] });
    expect(late.errors).toEqual([]);
    await Promise.all([a.close(), late.close()]);
  });

  it("a replica that does not follow sees the announced writer go first without waiting out its TTL", async () => {
    // The CI failure: a non-live compactor waited for its own revision to move to learn that an
    // intent had been served, so it sat out the whole TTL, its own intent lapsed meanwhile, and it
    // lost 100 races to the live writers. It must read the log while it waits.
    const log = new MemoryLog();
    const c = await open(log, { clientId: "c", compaction: false, live: false });
    log.injectRaw(intent("b"));
    await c.fetchUpdates(); // c has seen b's intent
    log.injectRaw(increment("b")); // b goes first; c, not following, does not see it by itself
    // An entry that lands only when b's intent would have lapsed, long after b's update.
    const late = new Promise<number>((resolve) =>
      setTimeout(() => resolve(log.injectRaw(increment("late"))), 900),
    );
    const result = await c.update("increment", { by: 1 });
    const lateRevision = await late;
    expect(result.revision).toBeLessThan(lateRevision); // c went right after b, not after the TTL
    expect(result.attempts).toBe(1);
    await c.close();
  });

  it("a writer still losing when its intent is about to lapse announces again", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    let runs = 0;
    // Others append before each of the first five attempts; the fourth attempt takes longer than
    // half the intent's TTL (a slow machine), so the intent of the third conflict is nearly spent.
    const result = await a.update((d) => {
      runs += 1;
      if (runs === 4) for (const until = Date.now() + 600; Date.now() < until;);
      if (runs <= 5) log.injectRaw(increment("other"));
      d.count += 1;
      return runs;
    });
    expect(result.attempts).toBe(6);
    const intents = (await a.history()).filter((h) => h.kind === "intent");
    expect(intents.map((h) => h.clientId)).toEqual(["a", "a"]);
    await a.close();
  });

  it("a writer announcing again keeps its place before writers that announced after it", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    let runs = 0;
    let late: Promise<number> | undefined;
    const result = await a.update((d) => {
      runs += 1;
      if (runs === 4) {
        for (const until = Date.now() + 600; Date.now() < until;);
        // y announces after a's first intent: a's place is before y's, also after a announces
        // again, so a must not wait for y (y, in turn, waits for a).
        log.injectRaw(intent("y"));
        late = new Promise((resolve) =>
          setTimeout(() => resolve(log.injectRaw(increment("late"))), 900),
        );
      }
      if (runs <= 5) log.injectRaw(increment("other"));
      d.count += 1;
      return runs;
    });
    expect(result.revision).toBeLessThan(await late!);
    await a.close();
  });
});
