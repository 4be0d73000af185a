import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, type LogInfo } from "@statesync/core";
import { encodeEntry } from "../src/entry.js";
import { counterModel } from "./fixtures.js";

/**
 * A fresh-eyes trial: on a shared-stream key, `waitFor(rev)` asks the log where it stands before
 * it registers its waiter; a replica that stalled meanwhile (a raw conditional entry on its key)
 * had rejected its waiters already, and this one never settled (6 of 7 runs).
 * Outcome: it rejects with the stall. The shared layout is a `MemoryLog` read as not contiguous,
 * whose `info()` answers only once the replica has stalled.
 */
describe("waitFor when the replica stalls while it asks the log where it stands", () => {
  it("rejects with the stall instead of never settling", async () => {
    const memory = new MemoryLog();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let hold = false;
    const log = Object.create(memory, {
      contiguous: { value: false },
      info: {
        value: async (): Promise<LogInfo> => {
          if (hold) await held;
          return memory.info();
        },
      },
    }) as MemoryLog;
    const sync = await createSynchronizer({
      log,
      model: counterModel,
      snapshots: false,
      compaction: false,
    });
    sync.on("error", () => undefined);
    await sync.synced();
    await sync.update("increment", { by: 1 });
    const revision = sync.revision;

    hold = true;
    const waited = sync.waitFor(revision + 1).then(
      () => "resolved",
      (e: { code?: string }) => e.code,
    );
    // A conditional entry based past this replica's revision: in a shared stream, missed entries.
    const ahead = { v: 2, kind: "update", base: revision + 5, ts: 1, seed: 1, client: "x" };
    await memory.appendUnconditional(encodeEntry({ ...ahead, patches: [] } as never), "ahead");
    // The live follower delivers it; the replica stalls (in a shared stream, a gap).
    for (let i = 0; i < 250 && sync.status !== "stalled"; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(sync.status).toBe("stalled");
    release();
    const pending = new Promise((r) => setTimeout(() => r("still pending"), 2_000));
    expect(await Promise.race([waited, pending])).toBe("TRUNCATED");
    await sync.close();
  });
});
