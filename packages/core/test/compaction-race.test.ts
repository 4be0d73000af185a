import { MemoryLog, type LogEntry, type RevisionedLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/** A log handle that runs `beforeRead` once, just before its next read starts. */
function withHook(log: RevisionedLog): RevisionedLog & { beforeRead?: () => Promise<unknown> } {
  const hooked: RevisionedLog & { beforeRead?: () => Promise<unknown> } = Object.create(log);
  hooked.read = async function* (from: number, to: number): AsyncIterable<LogEntry> {
    const hook = hooked.beforeRead;
    hooked.beforeRead = undefined;
    await hook?.();
    yield* log.read(from, to);
  };
  return hooked;
}

describe("catch-up racing a compaction (issue 10, case 1)", () => {
  it("fetchUpdates continues from the snapshot entry that replaced what it was about to read", async () => {
    const log = new MemoryLog();
    const writer = await open(log.handle(), { clientId: "w", compaction: false });
    const readerLog = withHook(log.handle());
    const reader = await open(readerLog, { clientId: "r", live: false, compaction: false });
    for (let i = 0; i < 50; i++) await writer.updateUnconditionally("increment", { by: 1 });
    await writer.fetchUpdates();
    // The reader has asked for the latest revision (51); the compaction lands before its read.
    readerLog.beforeRead = () => writer.compact();
    expect(await reader.fetchUpdates()).toBe(52);
    expect(reader.status).not.toBe("stalled");
    expect(reader.state).toEqual(writer.state);
    expect(reader.state.count).toBe(50);
    // and it goes on afterwards
    await writer.updateUnconditionally("increment", { by: 1 });
    expect(await reader.fetchUpdates()).toBe(53);
    expect(reader.state.count).toBe(51);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("a replica opening while a compaction truncates the log opens on the snapshot entry", async () => {
    const log = new MemoryLog();
    const writer = await open(log.handle(), { clientId: "w", compaction: false });
    for (let i = 0; i < 30; i++) await writer.updateUnconditionally("increment", { by: 2 });
    await writer.fetchUpdates();
    const readerLog = withHook(log.handle());
    readerLog.beforeRead = () => writer.compact();
    const reader = await open(readerLog, { clientId: "r", compaction: false });
    expect(reader.status).toBe("live");
    expect(reader.state.count).toBe(60);
    await Promise.all([writer.close(), reader.close()]);
  });
});

/**
 * A log handle whose next read pauses after `after` entries, runs `midRead` (a compaction), and
 * then reads on from where it stopped, as a JetStream read pulling in batches does when a purge
 * lands between two pulls.
 */
function pausingRead(log: RevisionedLog, after: number) {
  const hooked: RevisionedLog & { midRead?: () => Promise<unknown> } = Object.create(log);
  hooked.read = async function* (from: number, to: number): AsyncIterable<LogEntry> {
    const hook = hooked.midRead;
    hooked.midRead = undefined;
    let n = 0;
    let next = from;
    for await (const e of log.read(from, to)) {
      yield e;
      next = e.revision + 1;
      if (hook && ++n === after) break;
    }
    if (hook && n === after) {
      await hook();
      yield* log.read(next, to);
    }
  };
  return hooked;
}

describe("history and stateAt overtaken by a compaction in the middle of their read", () => {
  async function setup() {
    const log = new MemoryLog();
    const writer = await open(log.handle(), { clientId: "w", compaction: false });
    for (let i = 0; i < 30; i++) await writer.updateUnconditionally("increment", { by: 1 });
    await writer.fetchUpdates(); // revisions 2..31, count at revision r is r - 1
    const readerLog = pausingRead(log.handle(), 10);
    const reader = await open(readerLog, { clientId: "r", live: false, compaction: false });
    return { writer, reader, readerLog };
  }

  it("stateAt never answers with the state of an earlier revision: the true state, or TRUNCATED", async () => {
    const { writer, reader, readerLog } = await setup();
    readerLog.midRead = () => writer.compact();
    // It read revisions 1..10, then 11..25 were truncated away: state@10 is not state@25.
    const answer = await reader.stateAt(25).then(
      (s) => s,
      (e: { code?: string }) => e.code,
    );
    expect(answer).toBe("TRUNCATED");
    // A revision at or after the snapshot entry is rebuilt from it, also when overtaken again.
    await writer.updateUnconditionally("increment", { by: 1 }); // revision 33
    readerLog.midRead = () => writer.compact();
    expect((await reader.stateAt(33)).count).toBe(31);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("history lists the entries retained at one moment, never a listing with a hole", async () => {
    const { writer, reader, readerLog } = await setup();
    readerLog.midRead = () => writer.compact();
    const listed = (await reader.history()).map((h) => h.revision);
    expect(listed).toEqual([32]); // the snapshot entry, all that is retained now
    const again = (await reader.history()).map((h) => h.revision);
    expect(again).toEqual(listed);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("waitFor on a replica that does not follow continues from the snapshot entry", async () => {
    const log = new MemoryLog();
    const writer = await open(log.handle(), { clientId: "w", compaction: false });
    const readerLog = withHook(log.handle());
    const reader = await open(readerLog, { clientId: "r", live: false, compaction: false });
    for (let i = 0; i < 30; i++) await writer.updateUnconditionally("increment", { by: 1 });
    await writer.fetchUpdates();
    readerLog.beforeRead = () => writer.compact();
    await reader.waitFor(31);
    expect(reader.revision).toBe(32);
    expect(reader.status).not.toBe("stalled");
    expect(reader.state).toEqual(writer.state);
    await Promise.all([writer.close(), reader.close()]);
  });
});
