import { describe, expect, it } from "vitest";
import { OwnEntries } from "../src/engine/own-entries.js";
import { Reader } from "../src/engine/reader.js";
import { Replica } from "../src/engine/replica.js";
import { emptyStats, StatusHub } from "../src/engine/status.js";
import { MemoryLog } from "../src/memory-log.js";
import {
  genesisText as genesis,
  incText as inc,
  snapshotText as snapshot,
  tinyModel as model,
} from "./engine-fixtures.js";

function parts(log: MemoryLog) {
  const status = new StatusHub();
  const replica = new Replica(model, true, status, emptyStats(), new OwnEntries());
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
