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
});
