import { MemoryLog, type LogEntry, type LogFollowHandler, type LogFollower } from "@statesync/core";
import { expect, it } from "vitest";
import { counterModel, open } from "./fixtures.js";

/** A command of a writer of the stream before it was deleted and created again (format 3). */
const stray = JSON.stringify({
  v: 3,
  kind: "command",
  ts: 1_700_000_000_000,
  seed: 1,
  client: "old",
  name: "increment",
  args: { by: 100 },
  mv: counterModel.version,
});

/** A stream without `deny_delete` (allowed, with a warning) where one message was deleted. */
class HoleLog extends MemoryLog {
  readonly hole = new Set<number>();
  override async *read(from: number, to: number): AsyncIterable<LogEntry> {
    for await (const e of super.read(from, to)) if (!this.hole.has(e.revision)) yield e;
  }
  override follow(from: number, handler: LogFollowHandler): LogFollower {
    const onEntry = (e: LogEntry) => (this.hole.has(e.revision) ? undefined : handler.onEntry(e));
    return super.follow(from, { ...handler, onEntry });
  }
  override async entryAt(revision: number): Promise<LogEntry | undefined> {
    return this.hole.has(revision) ? undefined : super.entryAt(revision);
  }
}

/**
 * `Replay.neverStarted` (a log of one state read from revision 1 with no starting point) must
 * not hold for a log read across a missing sequence: the deleted message may have been its start,
 * and starting it again from the initial state drops the state other replicas hold. Found by a
 * review: the entries read without a state were not checked for gaps, so a fresh replica reset a
 * log whose re-anchoring snapshot entry had been deleted (`nats stream rmm`) instead of stopping
 * `TRUNCATED` ("No silent gaps", docs/guarantees.md).
 */
it("a log whose start was deleted from the middle stops TRUNCATED instead of starting again", async () => {
  const log = new HoleLog();
  log.injectRaw(stray); // 1: a command before any start (a stream created again)
  const a = await open(log, { clientId: "a", compaction: false }); // starts it again at 2
  expect(a.revision).toBe(2);
  for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 }); // 3..5
  expect(a.state.count).toBe(3);
  await a.close();
  log.hole.add(2); // the snapshot entry at 2 deleted
  const opened = await open(log, { clientId: "b", compaction: false }).then(
    (b) => ({ b }),
    (e: unknown) => ({ e }),
  );
  expect(opened).toMatchObject({ e: { code: "TRUNCATED" } });
  expect((await log.info()).latestRevision).toBe(5); // nothing written over the state
});
