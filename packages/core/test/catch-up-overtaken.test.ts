import { afterEach, describe, expect, it } from "vitest";
import { MemoryLog, type LogInfo } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * A catch-up whose read is overtaken by compactions (reader.ts, `readRange`). A trial (stop 33):
 * a replica behind a slow proxy, on a log three writers compacted every 40 entries, asked the log
 * where it ends, and by the time its read started a compaction had truncated the log past that
 * revision: the read found nothing; four such reads in a row and the replica stalled `TRUNCATED`
 * for good, on a log that held everything it needed (a snapshot entry). Here a compaction runs
 * between every `info()` and the read after it.
 */
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** The victim's handle: `afterInfo` runs after each `info()` answer, before the caller reads. */
class Overtaken extends MemoryLog {
  afterInfo: (() => Promise<void>) | undefined;
  override async info(): Promise<LogInfo> {
    const info = await super.info();
    await this.afterInfo?.();
    return info;
  }
}

describe("a catch-up overtaken by compactions again and again", () => {
  it("reads on to the snapshot entry instead of stalling TRUNCATED", async () => {
    const log = new Overtaken();
    const writer = await open(log.handle(), { clientId: "writer", compaction: false });
    stops.push(() => writer.close());
    await writer.update("increment", { by: 1 });
    const victim = await open(log, { clientId: "victim", live: false, compaction: false });
    stops.push(() => victim.close());
    await writer.update("increment", { by: 1 }); // the victim (not following) is behind
    let compactions = 0;
    log.afterInfo = async () => {
      if (compactions >= 8) return;
      compactions += 1;
      for (let i = 0; i < 3; i++) await writer.update("increment", { by: 1 });
      await writer.compact(); // the log now starts past the revision info() just answered
    };
    const synced = await victim.synced().then(
      (r) => r,
      (e: Error) => e,
    );
    log.afterInfo = undefined;
    // Overtaken at least once (before the fix: four short reads, then TRUNCATED for good).
    expect(compactions).toBeGreaterThanOrEqual(2);
    expect(synced).toBeTypeOf("number");
    expect(victim.status).not.toBe("stalled");
    await writer.synced();
    await victim.synced();
    expect(victim.state).toEqual(writer.state);
  });
});
