import { describe, expect, it } from "vitest";
import { MemoryLog, type RevisionedLog } from "@statesync/core";
import { codeOf, counterModel, open, until } from "./fixtures.js";

/** Fault handling of the engine against MemoryLog's injected faults (LiveStore style). */
describe("faults on MemoryLog", () => {
  it("resolves a conditional update whose acknowledgement was lost as committed, applied once", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.loseNextAcks(1);
    const r = await a.update("increment", { by: 1 });
    expect(r.revision).toBe(2);
    expect(a.state.count).toBe(1);
    expect(log.size).toBe(2);
    expect(a.stats.resends).toBe(1);
    await a.close();
  });

  it("finds its entry by message id when the server checks the expected revision first (2.12+)", async () => {
    const log = new MemoryLog({ duplicateCheck: "expected-first" });
    const a = await open(log, { live: false });
    log.loseNextAcks(1);
    const r = await a.update("increment", { by: 1 });
    expect(r).toMatchObject({ revision: 2, attempts: 1 });
    expect(a.state.count).toBe(1);
    expect(log.size).toBe(2);
    await a.close();
  });

  it("treats a re-send conflict without its message id in the log as a real conflict", async () => {
    const log = new MemoryLog({ duplicateCheck: "expected-first" });
    const a = await open(log, { live: false, clientId: "a" });
    const b = await open(log, { live: false, clientId: "b" });
    // a's re-send waits until b has written (an ordering, whatever the machine's speed).
    let release = () => undefined as void;
    const bWrote = new Promise<void>((r) => (release = r));
    let aSends = 0;
    const append = log.appendConditional.bind(log);
    log.appendConditional = async (data, expected, messageId) => {
      if (messageId.startsWith("a-") && ++aSends === 2) await bWrote;
      return append(data, expected, messageId);
    };
    log.failNextAppends(1); // the first send never reached the log...
    const p = a.update((d) => {
      d.count += 1;
    });
    await until(() => aSends >= 2);
    await b.update("increment", { by: 10 }); // ...and someone else wrote meanwhile
    release();
    const r = await p;
    expect(r.attempts).toBe(2);
    expect(a.state.count).toBe(11);
    await Promise.all([a.close(), b.close()]);
  });

  it("applies a lost-ack unconditional command exactly once", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.loseNextAcks(2);
    const { revision } = await a.updateUnconditionally("increment", { by: 5 });
    await a.waitFor(revision);
    expect(a.state.count).toBe(5);
    expect(log.size).toBe(2);
    await a.close();
  });

  it("rejects with UNKNOWN_OUTCOME when a sent append cannot be confirmed before the deadline", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.loseNextAcks(1); // stored, acknowledgement lost...
    const p = a.update("increment", {}, { outcomeTimeoutMs: 200 });
    await until(() => log.size === 2);
    log.setOffline(true); // ...and the log is gone before the re-send
    expect(await codeOf(p)).toBe("UNKNOWN_OUTCOME");
    expect(a.status).toBe("offline");
    log.setOffline(false);
    await until(() => a.status === "live");
    await a.synced();
    expect(log.size).toBe(2);
    expect(a.state.count).toBe(1); // it was stored, once
    await a.close();
  });

  it("rides out a short outage: the update commits once the log is back", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const statuses: string[] = [];
    a.on("status", (s) => statuses.push(s));
    log.setOffline(true);
    const p = a.update("increment", { by: 2 });
    setTimeout(() => log.setOffline(false), 150);
    const r = await p;
    expect(r.revision).toBe(2);
    expect(a.state.count).toBe(2);
    expect(statuses).toEqual(["offline", "live"]);
    await a.close();
  });

  it("reports a permission denial and stores nothing", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.failNextAppends(1, "PERMISSION_DENIED");
    expect(await codeOf(a.update("increment", {}))).toBe("PERMISSION_DENIED");
    expect(log.size).toBe(1);
    await a.close();
  });

  it("keeps converging while appends are slow and several clients contend", async () => {
    const log = new MemoryLog();
    log.setAppendDelay(2);
    const clients = await Promise.all([open(log), open(log), open(log)]);
    await Promise.all(
      clients.flatMap((c) => Array.from({ length: 10 }, () => c.update("increment", { by: 1 }))),
    );
    const latest = Math.max(...clients.map((c) => c.revision));
    await Promise.all(clients.map((c) => c.waitFor(latest)));
    for (const c of clients) expect(c.state.count).toBe(30);
    await Promise.all(clients.map((c) => c.close()));
  });

  it("stops at TRUNCATED when a replica's position was truncated away", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    const b = await open(log);
    for (let i = 0; i < 5; i++) await b.update("increment", { by: 1 });
    await log.truncateBefore(4);
    expect(await codeOf(a.fetchUpdates())).toBe("TRUNCATED");
    expect(a.status).toBe("stalled");
    expect(a.state.count).toBe(0);
    expect(await codeOf(open(log))).toBe("TRUNCATED");
    await Promise.all([a.close(), b.close()]);
  });

  // Decision (stop 17, docs/guarantees.md): a log emptied by an operator (nothing retained) is
  // started again from the model's initial state by a replica with no state, as a purged key of
  // a shared stream is; it used to fail TRUNCATED for every fresh replica, for good. A replica
  // holding a local snapshot of it writes its state back instead (node faults/ tests).
  it("starts a log whose whole history was purged again from the initial state", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    await a.update("increment", {});
    await a.close();
    await log.truncateBefore(100);
    const b = await open(log);
    expect(b.state).toEqual(counterModel.initial);
    // History removed, not a corrupt entry (a trial found CORRUPT_ENTRY alarming for a purge).
    expect(b.errors.map((e) => [e.code, e.details.emptied])).toEqual([["TRUNCATED", true]]);
    await b.update("increment", {});
    expect(b.state.count).toBe(1);
    await b.close();
  });
});

describe("synced({ signal }) while the first connection is still pending (fresh-eyes trial)", () => {
  it("rejects ABORTED when the signal aborts, not after the log's request timeout", async () => {
    const memory = new MemoryLog();
    // A log whose calls wait 3 s, as a connection that is not made yet waits its request timeout.
    const slow: RevisionedLog = Object.create(memory.handle());
    slow.info = async () => {
      await new Promise((r) => setTimeout(r, 3_000));
      return memory.info();
    };
    const a = await open(slow, { waitFor: "restored", compaction: false });
    const synced = a.synced({ signal: AbortSignal.timeout(100) }).then(
      () => "synced",
      (e: { code?: string }) => e.code,
    );
    const late = new Promise((r) => setTimeout(() => r("late"), 2_000));
    expect(await Promise.race([synced, late])).toBe("ABORTED");
    await a.close();
  });
});
