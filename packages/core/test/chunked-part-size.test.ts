import { describe, expect, it } from "vitest";
import { decodeEntry, MemoryLog, stateHash } from "@statesync/core";
import { codeOf, open } from "./fixtures.js";

/**
 * How large a chunked snapshot's parts are under a small entry limit (a fresh-eyes trial: the
 * writer assumed 512 bytes of envelope per part, so under a limit near 512 every part held one
 * character: a 15 KB state became 15,600 parts). Parts now fill what the limit leaves after
 * their measured envelope, and a limit leaving too little is refused before anything is written.
 */

async function partSizes(log: MemoryLog): Promise<number[]> {
  const sizes: number[] = [];
  for await (const e of log.read(1, (await log.info()).latestRevision)) {
    const d = decodeEntry(e.data);
    if (d.ok && d.entry.kind === "part" && d.entry.index > 0) sizes.push(d.entry.data.length);
  }
  return sizes;
}

/** About 16 KB of plain items. */
async function fill(sync: Awaited<ReturnType<typeof open>>): Promise<void> {
  for (let i = 0; i < 40; i++) {
    await sync.updateUnconditionally("push", { item: `${i} ${"x".repeat(400)}` });
  }
}

describe("the parts of a chunked snapshot under a small entry limit", () => {
  it("fill the limit less their envelope (1,000 bytes: parts of 700 characters or more), and load", async () => {
    const log = new MemoryLog({ maxEntryBytes: 1_000 });
    const a = await open(log, { compaction: false });
    await fill(a);
    await a.compact();
    const sizes = await partSizes(log);
    expect(sizes.length).toBeGreaterThan(5);
    expect(Math.min(...sizes.slice(0, -1))).toBeGreaterThanOrEqual(700); // before: 488
    const b = await open(log, { compaction: false });
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), b.close()]);
  });

  it("a limit leaving less than 256 bytes of data per part is PAYLOAD_TOO_LARGE, nothing written", async () => {
    const log = new MemoryLog({ maxEntryBytes: 420 });
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 40; i++)
      await a.updateUnconditionally("push", { item: `${i} ${"x".repeat(200)}` });
    const before = (await log.info()).latestRevision;
    expect(await codeOf(a.compact())).toBe("PAYLOAD_TOO_LARGE"); // before: 8,000 parts of 1 character
    expect((await log.info()).latestRevision).toBe(before);
    await a.close();
  });
});
