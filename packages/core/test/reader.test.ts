import type { SyncStats } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { OwnEntries } from "../src/engine/own-entries.js";
import { Reader } from "../src/engine/reader.js";
import { Replica } from "../src/engine/replica.js";
import { StatusHub } from "../src/engine/status.js";
import { MemoryLog } from "../src/memory-log.js";
import { defineModel } from "../src/model.js";

const model = defineModel({
  name: "r",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const json = (o: unknown) => JSON.stringify(o);
const genesis = json({
  v: 1,
  kind: "genesis",
  ts: 1,
  client: "g",
  model: "r",
  version: 1,
  initialHash: model.initialHash,
});
const inc = json({ v: 1, kind: "command", ts: 1, seed: 1, client: "o", name: "inc", args: {} });
const snapshot = (base: number, n: number) =>
  json({
    v: 1,
    kind: "snapshot",
    base,
    ts: 1,
    client: "c",
    model: "r",
    version: 1,
    initialHash: model.initialHash,
    state: { n },
  });
const stats = (): SyncStats => ({
  entriesFetched: 0,
  entriesApplied: 0,
  entriesSkipped: 0,
  bytesFetched: 0,
  appends: 0,
  conflicts: 0,
  attempts: 0,
  resends: 0,
  snapshotsSaved: 0,
  snapshotsRestored: 0,
  compactions: 0,
});

function parts(log: MemoryLog) {
  const status = new StatusHub();
  const replica = new Replica(model, true, status, stats(), new OwnEntries());
  return { status, replica, reader: new Reader(log, replica, status) };
}

describe("Reader (catch-up reads) on MemoryLog", () => {
  it("reads on past its target to the snapshot entry that replaced a truncated range", async () => {
    const log = new MemoryLog();
    log.injectRaw(genesis);
    for (let i = 0; i < 5; i++) log.injectRaw(inc);
    const { reader, replica, status } = parts(log);
    await reader.readRange(1);
    // A compaction lands between the target being read (6) and the read itself.
    log.injectRaw(snapshot(6, 5));
    await log.truncateBefore(7);
    await reader.readRange(6);
    expect(status.status).not.toBe("stalled");
    expect(replica.revision).toBe(7);
    expect(replica.state).toEqual({ n: 5 });
  });

  it("still stalls with TRUNCATED when the log holds nothing to continue from", async () => {
    const log = new MemoryLog();
    log.injectRaw(genesis);
    for (let i = 0; i < 5; i++) log.injectRaw(inc);
    const { reader, replica, status } = parts(log);
    await reader.readRange(1);
    await log.truncateBefore(6); // history gone, and no snapshot entry replaced it
    await reader.readRange(6);
    expect(status.status).toBe("stalled");
    expect(status.stallReason?.code).toBe("TRUNCATED");
    expect(replica.revision).toBe(1);
  });

  it("lets the live follower deliver before it reads", async () => {
    const log = new MemoryLog();
    log.injectRaw(genesis);
    const { reader, replica } = parts(log);
    await reader.readRange(1);
    reader.startFollowing();
    log.injectRaw(inc);
    await reader.catchUp();
    expect(replica.revision).toBe(2);
    await reader.stopFollowing();
  });
});
