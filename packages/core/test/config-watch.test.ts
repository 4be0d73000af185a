import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigWatch, NOTICE_JITTER_MS } from "../src/engine/config-watch.js";
import { StatusHub } from "../src/engine/status.js";
import type { StateSyncError } from "../src/errors.js";
import { MemoryLog } from "../src/memory-log.js";
import { createSynchronizer } from "../src/synchronizer.js";
import { counterModel } from "./fixtures.js";

/**
 * Issue 10, case 5: live replicas notice a configuration that can drop history. With the log's
 * change notices (JetStream: the stream-update advisory) a notice checks at once (after a jitter
 * of up to 2 s) and the periodic check is ten times rarer; without them, or when they are
 * denied, the periodic check runs at `streamCheckIntervalMs`.
 */
function watched(log: MemoryLog, intervalMs: number) {
  const hub = new StatusHub();
  const errors: StateSyncError[] = [];
  hub.on("error", (e) => errors.push(e));
  const watch = new ConfigWatch(log, hub, intervalMs);
  watch.start();
  watch.check(); // what the opener does after connecting
  return { watch, errors };
}

const codes = (errors: StateSyncError[]) => errors.map((e) => e.code);

describe("ConfigWatch (engine/config-watch.ts)", () => {
  afterEach(() => vi.useRealTimers());

  it("a notice checks within the jitter, long before the periodic check", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    const { watch, errors } = watched(log, 45_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.watching).toBe(true);
    log.setConfigProblem("max_msgs is 3");
    await vi.advanceTimersByTimeAsync(NOTICE_JITTER_MS);
    expect(codes(errors)).toEqual(["STREAM_CONFIG"]);
    expect(errors[0]!.message).toBe("max_msgs is 3");
    watch.stop();
  });

  it("with notices the periodic check is ten times rarer; it still finds an unnotified edit", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    const { watch, errors } = watched(log, 45_000);
    await vi.advanceTimersByTimeAsync(0);
    log.setConfigProblem("max_age is 1h", { notify: false });
    await vi.advanceTimersByTimeAsync(45_000 * 1.34);
    expect(errors).toEqual([]); // the 45 s check is not running: notices are relied on
    await vi.advanceTimersByTimeAsync(450_000 * 1.34);
    expect(codes(errors)).toEqual(["STREAM_CONFIG"]);
    watch.stop();
  });

  it("denied notices: falls back to the periodic check silently", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    log.denyConfigWatch();
    const { watch, errors } = watched(log, 45_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.watching).toBe(false);
    expect(errors).toEqual([]);
    log.setConfigProblem("max_msgs is 3");
    await vi.advanceTimersByTimeAsync(45_000 * 1.34);
    expect(codes(errors)).toEqual(["STREAM_CONFIG"]);
    watch.stop();
  });

  it("a notice during a check runs one more check after it", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    const { watch, errors } = watched(log, 0);
    // The first check is in flight (info() not settled yet) when the edit and its notice come.
    log.setConfigProblem("discard is new");
    await vi.advanceTimersByTimeAsync(0);
    // Either that first check saw the edit or the one after the notice did; once, in any case.
    await vi.advanceTimersByTimeAsync(NOTICE_JITTER_MS);
    expect(codes(errors)).toEqual(["STREAM_CONFIG"]);
    log.setConfigProblem("max_msgs is 3");
    await vi.advanceTimersByTimeAsync(NOTICE_JITTER_MS);
    expect(errors.map((e) => e.message)).toEqual(["discard is new", "max_msgs is 3"]);
    watch.stop();
  });

  it("after stop() no notice and no timer checks again", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    const { watch, errors } = watched(log, 1_000);
    await vi.advanceTimersByTimeAsync(0);
    watch.stop();
    log.setConfigProblem("max_msgs is 3");
    await vi.advanceTimersByTimeAsync(60_000);
    expect(errors).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("a replica hears of an edited configuration through the log's notices", () => {
  it("reports STREAM_CONFIG while its periodic check is 10 minutes away", async () => {
    const log = new MemoryLog();
    const errors: StateSyncError[] = [];
    const sync = await createSynchronizer({
      log,
      model: counterModel,
      compaction: false,
      streamCheckIntervalMs: 600_000,
      onError: (e) => errors.push(e),
    });
    log.setConfigProblem("max_msgs is 3");
    await vi.waitFor(() => expect(codes(errors)).toEqual(["STREAM_CONFIG"]), {
      timeout: 10_000,
    });
    expect(sync.status).toBe("live");
    await sync.close();
  });

  // Regression test (fresh-eyes trial): a replica reported STREAM_CONFIG and still said
  // `writable: true`, although the log refuses every append on such a stream, until an update of
  // its own failed; an app showed an editable view whose every edit would fail.
  it("is not writable while the configuration is refused, and writable again once it is usable", async () => {
    const log = new MemoryLog();
    const changes: Array<[boolean, string | undefined]> = [];
    const sync = await createSynchronizer({
      log,
      model: counterModel,
      compaction: false,
      streamCheckIntervalMs: 600_000,
    });
    sync.on("writable", (w, e) => changes.push([w, e?.code]));
    await sync.update("increment", { by: 1 });
    log.setConfigProblem("max_msgs is 3");
    await vi.waitFor(() => expect(sync.writable).toBe(false), { timeout: 10_000 });
    expect(sync.writeError?.code).toBe("STREAM_CONFIG");
    await expect(sync.update("increment", { by: 1 })).rejects.toMatchObject({
      code: "STREAM_CONFIG",
    });
    log.setConfigProblem(undefined); // the operator takes the edit back
    await vi.waitFor(() => expect(sync.writable).toBe(true), { timeout: 10_000 });
    await sync.update("increment", { by: 1 });
    expect(sync.state.count).toBe(2);
    expect(changes).toEqual([
      [false, "STREAM_CONFIG"],
      [true, undefined],
    ]);
    await sync.close();
  });
});
