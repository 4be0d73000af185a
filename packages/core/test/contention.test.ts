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
});
