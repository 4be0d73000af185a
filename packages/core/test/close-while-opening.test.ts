import { MemoryLog, type LogEntry, type RevisionedLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open, until } from "./fixtures.js";

/**
 * A replica closed while its opening catch-up is still reading ends quietly: before, the read
 * came back empty-handed, the opener took the unanchored replica for a log without a usable
 * first entry, reported `CORRUPT_ENTRY` and tried to write a repairing snapshot entry (which
 * failed `CLOSED`). Found by the issue 13 limits work.
 */
describe("close() during the opening catch-up", () => {
  it("reports nothing and appends nothing", async () => {
    const log = new MemoryLog();
    const writer = await open(log.handle(), { clientId: "w", compaction: false });
    for (let i = 0; i < 20; i++) await writer.updateUnconditionally("increment", { by: 1 });
    await writer.close();
    const latest = (await log.info()).latestRevision;

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reading = false;
    const base = log.handle();
    const paused: RevisionedLog = Object.create(base);
    paused.read = async function* (from: number, to: number): AsyncIterable<LogEntry> {
      reading = true;
      await gate;
      yield* base.read(from, to);
    };
    const reader = await open(paused, { clientId: "r", waitFor: "restored", compaction: false });
    await until(() => reading);
    const closing = reader.close();
    release();
    await closing;
    await new Promise((r) => setTimeout(r, 50));
    expect(reader.errors.map((e) => e.code)).toEqual([]);
    expect((await log.info()).latestRevision).toBe(latest);
  });
});

/**
 * `close()` while the first opening waits for a log that does not answer (a server that stopped
 * answering, with a long request timeout): before, every wait on the opening (updates,
 * `synced()`, and `close()`, which waits for the batch being written) lasted until the log
 * answered. The log here answers only when the test lets it, after `close()` resolved: that
 * `close()` resolves at all proves that it did not wait for the log.
 */
describe("close() while the first opening waits for the log", () => {
  it("resolves, rejects every waiter CLOSED, and uses nothing the log answers later", async () => {
    const log = new MemoryLog();
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    let asked = false;
    const base = log.handle();
    const slow: RevisionedLog = Object.create(base);
    slow.info = async () => {
      asked = true;
      await held;
      return base.info();
    };
    const sync = await open(slow, { clientId: "c", waitFor: "restored", compaction: false });
    const statuses: string[] = [];
    sync.on("status", (s) => statuses.push(s));
    await until(() => asked);
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => "resolved",
        (e: { code?: string }) => e.code ?? String(e),
      );
    const waiters = [
      outcome(sync.synced()),
      outcome(sync.fetchUpdates()),
      outcome(sync.update("increment", { by: 1 })),
      outcome(sync.updateUnconditionally("increment", { by: 1 })),
    ];
    await sync.close();
    expect(await Promise.all(waiters)).toEqual(["CLOSED", "CLOSED", "CLOSED", "CLOSED"]);
    expect(statuses.at(-1)).toBe("closed");
    const seen = statuses.length;
    answer(); // the log answers now: the opening must not go on (no genesis, no event)
    await new Promise((r) => setTimeout(r, 50));
    expect((await log.info()).latestRevision).toBe(0);
    expect(sync.errors).toEqual([]);
    expect(statuses.length).toBe(seen);
  });
});

/**
 * The same once open: a catch-up waiting for a log that does not answer (`synced()`,
 * `fetchUpdates()`, and a writer's catch-up after a conflict, which `close()` waits for) ends
 * `CLOSED` when the replica closes.
 */
describe("close() while a catch-up waits for the log", () => {
  it("resolves and rejects every waiter CLOSED", async () => {
    const log = new MemoryLog();
    const base = log.handle();
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    let holding = false;
    let asked = 0;
    const hold = async () => {
      if (!holding) return;
      asked += 1;
      await held;
    };
    const slow: RevisionedLog = Object.create(base);
    slow.info = async () => {
      await hold();
      return base.info();
    };
    slow.read = async function* (from: number, to: number): AsyncIterable<LogEntry> {
      await hold();
      yield* base.read(from, to);
    };
    const sync = await open(slow, { clientId: "c", live: false, compaction: false });
    await sync.update("increment", { by: 1 });
    const other = await open(log.handle(), { clientId: "o", compaction: false });
    await other.update("increment", { by: 1 }); // the next update of `sync` conflicts
    holding = true;
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => "resolved",
        (e: { code?: string }) => e.code ?? String(e),
      );
    const waiters = [
      outcome(sync.update("increment", { by: 1 })),
      outcome(sync.synced()),
      outcome(sync.fetchUpdates()),
    ];
    await until(() => asked >= 3);
    await sync.close();
    expect(await Promise.all(waiters)).toEqual(["CLOSED", "CLOSED", "CLOSED"]);
    answer();
    await other.close();
    expect(sync.errors).toEqual([]);
  });
});
