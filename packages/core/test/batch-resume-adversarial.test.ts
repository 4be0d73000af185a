import { MemoryLog, StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, open } from "./fixtures.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function batchBehind(a: { update(recipe: () => void): Promise<unknown> }): void {
  void a
    .update(() => {
      throw new Error("only starts the writer");
    })
    .catch(() => undefined);
}

async function entries(log: MemoryLog): Promise<number> {
  return (await log.info()).latestRevision;
}

describe("adversarial: the re-send of a shared entry after one of its updates ended", () => {
  it("several updates ending one after another: the last commits once, the others unknown", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(1_500);
    batchBehind(a);
    const one = a.update("increment", { by: 1 }, { signal: AbortSignal.timeout(100) });
    const two = a.update("increment", { by: 10 }, { signal: AbortSignal.timeout(400) });
    const three = a.update("increment", { by: 100 }, { outcomeTimeoutMs: 700 });
    const four = a.update("increment", { by: 1000 });
    expect(await codeOf(one)).toBe("UNKNOWN_OUTCOME");
    expect(await codeOf(two)).toBe("UNKNOWN_OUTCOME");
    expect(await codeOf(three)).toBe("UNKNOWN_OUTCOME");
    const done = await four;
    expect(done.state.count).toBe(1111);
    await sleep(1_600);
    log.setAppendDelay(0);
    await a.fetchUpdates();
    expect(a.state.count).toBe(1111);
    expect(await entries(log)).toBe(2);
    await a.close();
  });

  it("the first send landed, then another writer's entry: the re-send conflicts and finds it", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    const b = await open(log, { compaction: false });
    log.setAppendDelay(300);
    batchBehind(a);
    const short = a.update("increment", { by: 1 }, { outcomeTimeoutMs: 150 });
    const other = a.update("increment", { by: 10 });
    expect(await codeOf(short)).toBe("UNKNOWN_OUTCOME");
    await sleep(250); // a's first send is stored by now
    log.setAppendDelay(0);
    await b.waitFor(2);
    await b.update("increment", { by: 100 });
    const committed = await other;
    expect(committed.revision).toBe(2);
    await a.waitFor(3);
    expect(a.state.count).toBe(111); // never 121: `other` applied twice
    await Promise.all([a.close(), b.close()]);
  });

  it("lost acknowledgements during the re-send: stored once", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.loseNextAcks(3);
    batchBehind(a);
    const ctl = new AbortController();
    const one = a.update("increment", { by: 1 }, { signal: ctl.signal });
    const other = a.update("increment", { by: 10 });
    await sleep(80);
    ctl.abort();
    expect(await codeOf(one)).toBe("UNKNOWN_OUTCOME");
    const committed = await other;
    expect(committed.state.count).toBe(11);
    await a.fetchUpdates();
    expect(a.state.count).toBe(11);
    await a.close();
  });

  it("offline during the re-send, then an abort of the last: unknown, never re-run", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(300);
    batchBehind(a);
    const c1 = new AbortController();
    const c2 = new AbortController();
    const one = a.update("increment", { by: 1 }, { signal: c1.signal });
    const other = a.update("increment", { by: 10 }, { signal: c2.signal });
    await sleep(50);
    c1.abort();
    expect(await codeOf(one)).toBe("UNKNOWN_OUTCOME");
    log.setOffline(true);
    await sleep(400); // the first send was stored
    c2.abort();
    const code = await codeOf(other);
    expect(code).toBe("UNKNOWN_OUTCOME");
    log.setOffline(false);
    log.setAppendDelay(0);
    await a.fetchUpdates();
    // Whether the delayed first send was stored while off line: the state says it once.
    expect(a.state.count).toBe((await entries(log)) === 2 ? 11 : 0);
    await a.close();
  });

  it("close() during the re-send: the other is told stored or unknown, never refused", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(600);
    batchBehind(a);
    const one = a.update("increment", { by: 1 }, { signal: AbortSignal.timeout(100) });
    const other = a.update("increment", { by: 10 });
    expect(await codeOf(one)).toBe("UNKNOWN_OUTCOME");
    await sleep(50);
    await a.close();
    const outcome = await other.then(
      (r) => `ok ${r.state.count}`,
      (e: StateSyncError) => e.code,
    );
    expect(["ok 11", "UNKNOWN_OUTCOME"]).toContain(outcome);
    await sleep(700);
    expect(await entries(log)).toBe(2);
  });
});
