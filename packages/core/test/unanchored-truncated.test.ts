import { MemoryLog, type StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/**
 * What a fresh replica's `TRUNCATED` says when the log it opens holds no start: the entries
 * missing before the first one it read, not the ones after the revision a malformed entry moved
 * it to. A new user's trial: after a hand purge of 1-7 that left a garbage entry first (8), a
 * fresh replica skipped it (`CORRUPT_ENTRY`), then said "no longer holds the entries after
 * revision 8 … (next retained: 9)", though 9 follows 8 and what was missing was 1-7.
 */
describe("TRUNCATED of a log without a start", () => {
  async function opened(log: MemoryLog) {
    const errors: StateSyncError[] = [];
    const error = (await open(log, { clientId: "fresh", compaction: false }).then(
      () => undefined,
      (e: unknown) => e,
    )) as StateSyncError | undefined;
    return { error, errors };
  }

  it("names the entries before a garbage first entry, which the replica skipped", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 }); // 2..7
    expect(log.injectRaw("not an entry {")).toBe(8);
    for (let i = 0; i < 2; i++) await a.update("increment", { by: 1 }); // 9, 10
    await a.close();
    await log.truncateBefore(8); // by hand: the genesis and 2..7 removed
    const { error } = await opened(log);
    expect(error).toMatchObject({ code: "TRUNCATED", details: { after: 0, next: 8, last: 10 } });
    expect(error!.message).toMatch(
      /^the log no longer holds the entries before revision 8 \(purged or deleted\), and holds no genesis or snapshot entry to start from up to revision 10; a replica that still holds the state writes it back \(compact\(\)/,
    );
    expect(error!.message).not.toMatch(/after revision 8/);
    expect((await log.info()).latestRevision).toBe(10); // nothing written over the state
  });

  it("names a gap after the first entries it read", async () => {
    const log = new MemoryLog();
    log.injectRaw("not an entry {"); // 1
    const a = await open(log, { clientId: "a", compaction: false }); // starts it again at 2
    expect(a.revision).toBe(2);
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 }); // 3..5
    await a.close();
    const gapped = Object.assign(log.handle(), {
      async *read(from: number, to: number) {
        for await (const e of log.read(from, to)) if (e.revision !== 2) yield e;
      },
    });
    const fresh = await open(gapped, { clientId: "fresh", compaction: false }).catch(
      (e: unknown) => e as StateSyncError,
    );
    expect(fresh).toMatchObject({ code: "TRUNCATED", details: { after: 1, next: 3, last: 5 } });
    expect((fresh as StateSyncError).message).toMatch(
      /^the log no longer holds the entries after revision 1 \(next retained: 3\) \(purged or deleted\)/,
    );
  });
});
