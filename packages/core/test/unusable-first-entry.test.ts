import { MemoryLog } from "@statesync/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { counterModel, open } from "./fixtures.js";

/** The genesis an old client with a clock before 1970 wrote: every reader refuses it. */
const badGenesis = JSON.stringify({
  v: 1,
  kind: "genesis",
  ts: -5,
  client: "old",
  model: counterModel.name,
  version: counterModel.version,
  initialHash: counterModel.initialHash,
});

describe("a log whose first entry is unusable (issue 10, case 10)", () => {
  afterEach(() => vi.restoreAllMocks());

  it("a client with a clock before 1970 writes no genesis, and says why in its status", async () => {
    const log = new MemoryLog();
    vi.spyOn(Date, "now").mockReturnValue(-1_000);
    const errors: string[] = [];
    const a = await open(log, { waitFor: "restored", compaction: false }).then((s) => {
      s.on("error", (e) => errors.push(e.code));
      return s;
    });
    await vi.waitFor(() => expect(a.status).toBe("stalled"));
    expect(a.stallReason?.code).toBe("VALIDATION");
    expect(log.size).toBe(0);
    vi.restoreAllMocks();
    await a.close();
  });

  it("replicas that find only an unusable first entry start the log again from the initial state, once", async () => {
    const log = new MemoryLog();
    log.injectRaw(badGenesis);
    const [a, b] = await Promise.all([
      open(log.handle(), { clientId: "a", compaction: false }),
      open(log.handle(), { clientId: "b", compaction: false }),
    ]);
    expect([a.status, b.status]).toEqual(["live", "live"]);
    expect(a.revision).toBe(2);
    expect(b.revision).toBe(2);
    expect(a.errors.map((e) => e.code)).toContain("CORRUPT_ENTRY");
    await a.update("increment", { by: 3 });
    await b.updateUnconditionally("increment", { by: 1 });
    await a.fetchUpdates();
    await b.fetchUpdates();
    expect(a.state.count).toBe(4);
    expect(b.state).toEqual(a.state);
    expect((await a.history()).map((h) => h.kind)).toEqual([
      "malformed",
      "snapshot",
      "update",
      "command",
    ]);
    await Promise.all([a.close(), b.close()]);
  });

  /** A command entry as a writer of another log of the same model sends it (format 3). */
  const stray = (n: number) =>
    JSON.stringify({
      v: 3,
      kind: "command",
      ts: 1_700_000_000_000 + n,
      seed: n,
      client: "old",
      name: "increment",
      args: { by: 100 },
      mv: counterModel.version,
    });

  // A stream deleted and created again under writers of the old one: their unconditional commands
  // landed in the new stream before any genesis (a trial, on both servers). Nothing was truncated
  // (the log starts at revision 1), so no replica holds its state: every opening failed TRUNCATED
  // for good ("a replica that still holds the state writes it back"), fresh ones included.
  it.each([
    ["commands before any genesis", [stray(1), stray(2), stray(3)]],
    ["an unusable genesis, then commands", [badGenesis, stray(1), stray(2)]],
  ])("%s: replicas start the log again from the initial state, once", async (_, raw) => {
    const log = new MemoryLog();
    for (const text of raw) log.injectRaw(text);
    const [a, b] = await Promise.all([
      open(log.handle(), { clientId: "a", compaction: false }),
      open(log.handle(), { clientId: "b", compaction: false }),
    ]);
    expect([a.status, b.status]).toEqual(["live", "live"]);
    expect([a.revision, b.revision]).toEqual([4, 4]);
    expect(a.state.count).toBe(0); // the strays were meant for another log's state
    expect([...a.errors, ...b.errors].map((e) => e.code)).toContain("CORRUPT_ENTRY");
    await a.update("increment", { by: 3 });
    await b.updateUnconditionally("increment", { by: 1 });
    await a.fetchUpdates();
    await b.fetchUpdates();
    expect(a.state.count).toBe(4);
    expect(b.state).toEqual(a.state);
    expect((await log.info()).latestRevision).toBe(6); // one snapshot entry, not two
    await Promise.all([a.close(), b.close()]);
  });

  it("a log whose history was purged before commands still fails TRUNCATED (it had a state)", async () => {
    const log = new MemoryLog();
    const writer = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await writer.updateUnconditionally("increment", { by: 1 });
    await writer.close();
    await log.truncateBefore(3); // the genesis and the first command purged
    const c = await open(log, { compaction: false, waitFor: "restored" });
    await vi.waitFor(() => expect(c.status).toBe("stalled"));
    expect(c.stallReason?.code).toBe("TRUNCATED");
    await c.close();
  });
});
