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
