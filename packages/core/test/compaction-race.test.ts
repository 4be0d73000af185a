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
