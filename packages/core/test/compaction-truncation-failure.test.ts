import { describe, expect, it } from "vitest";
import { createSynchronizer, decodeEntry, MemoryLog } from "@statesync/core";
import { counterModel } from "./fixtures.js";

/**
 * A fresh-eyes trial: a shared-stream tenant's `compact()` failed `PERMISSION_DENIED` on the
 * purge after it had appended its snapshot entry, and the error said nothing of the entry. It
 * still fails with the log's code, and now says the snapshot entry was written (its revision in
 * `details.snapshotRevision`), which is there in the log for replicas to start from.
 */
describe("a compaction whose truncation the log refuses", () => {
  it("fails with the log's code and says the snapshot entry was written", async () => {
    const log = new MemoryLog();
    const sync = await createSynchronizer({
      log,
      model: counterModel,
      snapshots: false,
      compaction: false,
    });
    for (let i = 0; i < 3; i++) await sync.update("increment", { by: 1 });
    log.failNextTruncations(1, "PERMISSION_DENIED");
    const error = await sync.compact().then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string; details: Record<string, unknown> },
    );
    expect(error?.code).toBe("PERMISSION_DENIED");
    const at = error?.details.snapshotRevision as number;
    expect(error?.message).toContain(`the snapshot entry at revision ${at} was written`);
    const entry = await log.entryAt(at);
    const decoded = decodeEntry(entry!.data);
    expect(decoded.ok && decoded.entry.kind).toBe("snapshot");
    expect(sync.status).toBe("live");
    await sync.close();
  });
});
