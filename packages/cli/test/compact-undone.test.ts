import { encodeEntry, JetStreamLog, type Entry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  counterCommand,
  counterSnapshot,
  MODEL,
  openCounter,
  runCli,
  runJson,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * `statesync compact` on a log whose compaction purge was undone in part (nats-server 2.10 killed
 * with -9 right after the purge can put back entries before the snapshot entry the log starts
 * from: stop 36). Simulated by appending older entries, then a snapshot entry of the state, and
 * purging before the entries: the log starts with entries a replica reads past.
 */
describe("statesync compact after a purge undone in part", () => {
  const ctx = useNatsServer();
  const where = (stream: string, ...more: string[]) =>
    target(ctx.server.url, stream, "--model", MODEL, ...more);
  const note = (text: string) => counterCommand("note", { text });
  const snapshot = counterSnapshot;

  /**
   * genesis (1), increment by 2 (2), then `extra` (from 3), then the log truncated before
   * `cut`: its first retained entries precede the snapshot entry among `extra`.
   */
  async function undone(extra: Entry[], cut: number): Promise<string> {
    const stream = uniqueStream("UNDONE");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 });
    await a.close();
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    for (const [i, e] of extra.entries()) await log.appendUnconditional(encodeEntry(e), `t-${i}`);
    await log.truncateBefore(cut);
    await log.close();
    await nc.close();
    return stream;
  }

  it("purges the entries before a snapshot entry that ends the log, and says so", async () => {
    const stream = await undone(
      [note("a"), note("b"), snapshot(4, { count: 2, notes: ["a", "b"] })], // 3, 4, 5
      4,
    );
    expect(await runJson(["info", ...target(ctx.server.url, stream)])).toMatchObject({
      firstRevision: 4,
      entries: 2,
    });
    const r = await runCli(["compact", ...where(stream)]);
    // Before: "already compacted: … nothing written", though the entry at 4 was removed.
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout.trim()).toBe(
      "compacted: the log already ended with a snapshot entry of the current state (revision 5), so none was written; the entries before it were removed: the log now starts at revision 5 (was 4)",
    );
    const info = await runJson(["info", ...target(ctx.server.url, stream)]);
    expect(info).toMatchObject({ firstRevision: 5, entries: 1, revision: 5 });
    const replica = await openCounter(ctx.server.url, stream);
    expect(replica.state).toEqual({ count: 2, notes: ["a", "b"] });
    await replica.close();
    // Run again: now it is compacted, and says so.
    expect(await runJson(["compact", ...where(stream)])).toEqual({
      revision: 5,
      firstRevision: 5,
      removedFrom: 5,
      written: false,
      purged: false,
    });
  });
});
