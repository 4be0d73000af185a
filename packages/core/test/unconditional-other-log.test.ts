import { MemoryLog, StateSyncError, type AppendResult } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/**
 * An unconditional command acknowledged at a revision at or before the replica's own cannot have
 * landed in the log the replica applied: every append lands after that log's tail. Found by a
 * fresh-eyes trial: a stream deleted and re-created (same name and config) within milliseconds
 * under a replica writing commands; its next command landed at revision 1 of the new stream and
 * resolved `{ revision: 1 }` as applied, while the replica stood at 227 on the old one. The log
 * here is a `MemoryLog` rewound under a live replica (no reconnection, so no check), which acks
 * the same way.
 */
describe("an unconditional command acknowledged before the replica's revision", () => {
  it("rejects LOG_REPLACED naming where it was stored, and stalls the replica", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 5; i++) await a.update("increment", { by: 1 });
    await a.synced();
    const revision = a.revision;
    log.rewindTo(2);
    const outcome = await a.updateUnconditionally("increment", { by: 1 }).then(
      (r) => ({ resolved: r }),
      (e: unknown) => ({ rejected: e }),
    );
    expect(outcome).toMatchObject({
      rejected: { code: "LOG_REPLACED", details: { storedAt: 3, revision: 6 } },
    });
    expect(a.status).toBe("stalled");
    expect(a.stallReason?.code).toBe("LOG_REPLACED");
    expect(a.revision).toBe(revision);
    // Nothing more is sent into that log.
    await expect(a.updateUnconditionally("increment", { by: 1 })).rejects.toMatchObject({
      code: "LOG_REPLACED",
    });
    expect((await log.info()).latestRevision).toBe(3);
    await a.close();
  });

  it("also when the re-send after a lost acknowledgement lands in the other log", async () => {
    /** Its first unconditional append is stored, then the log goes back and the ack is lost. */
    class RewindingLog extends MemoryLog {
      rewindOnNext: number | undefined;
      override async appendUnconditional(
        ...args: Parameters<MemoryLog["appendUnconditional"]>
      ): Promise<AppendResult> {
        const result = await super.appendUnconditional(...args);
        if (this.rewindOnNext === undefined) return result;
        this.rewindTo(this.rewindOnNext);
        this.rewindOnNext = undefined;
        throw new StateSyncError("UNAVAILABLE", "injected: the acknowledgement was lost");
      }
    }
    const log = new RewindingLog();
    const a = await open(log, { compaction: false, live: false });
    for (let i = 0; i < 5; i++) await a.update("increment", { by: 1 });
    log.rewindOnNext = 2;
    await expect(a.updateUnconditionally("increment", { by: 1 })).rejects.toMatchObject({
      code: "LOG_REPLACED",
      details: { storedAt: 3, revision: 6 },
    });
    expect(a.status).toBe("stalled");
    expect(a.revision).toBe(6);
    await a.close();
  });
});
