import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { StatusHub } from "../src/engine/status.js";
import { StateSyncError } from "../src/errors.js";
import { codeOf, open, until } from "./fixtures.js";

/**
 * Issue 10, case 10, its end: "a replica that cannot write says so in its status". `status`
 * keeps its meaning (a read-only replica is `live`: it follows the log); `writable` and the
 * `"writable"` event say whether its writes can succeed, with the error that made them fail.
 */
type Change = [boolean, string | undefined];

async function watched(log: MemoryLog, extra: Parameters<typeof open>[1] = {}) {
  const sync = await open(log, { compaction: false, ...extra });
  const changes: Change[] = [];
  sync.on("writable", (writable, error) => changes.push([writable, error?.code]));
  return Object.assign(sync, { changes });
}

describe("writable (a replica that cannot write says so)", () => {
  it("denied appends make it not writable, still live; an append that succeeds makes it writable again", async () => {
    const log = new MemoryLog();
    const a = await watched(log);
    expect([a.writable, a.writeError]).toEqual([true, undefined]);
    log.failNextAppends(2, "PERMISSION_DENIED");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("PERMISSION_DENIED");
    expect(a.writable).toBe(false);
    expect(a.writeError?.code).toBe("PERMISSION_DENIED");
    expect(a.status).toBe("live");
    expect(await codeOf(a.updateUnconditionally("increment", { by: 1 }))).toBe("PERMISSION_DENIED");
    expect(a.changes).toEqual([[false, "PERMISSION_DENIED"]]); // announced once
    await a.update("increment", { by: 1 });
    expect([a.writable, a.writeError]).toEqual([true, undefined]);
    expect(a.changes).toEqual([
      [false, "PERMISSION_DENIED"],
      [true, undefined],
    ]);
    await a.close();
  });

  it("a failure of one update or a passing one leaves it writable", async () => {
    const log = new MemoryLog();
    const a = await watched(log);
    log.failNextAppends(1, "VALIDATION");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("VALIDATION");
    log.failNextAppends(1, "UNAVAILABLE");
    await a.update("increment", { by: 1 }); // re-sent: the first attempt was never sent
    expect(a.writable).toBe(true);
    expect(a.changes).toEqual([]);
    await a.close();
  });

  it("a denial outlives a reconnection: no read can show a permission was granted", async () => {
    const log = new MemoryLog();
    const a = await watched(log);
    log.failNextAppends(1, "PERMISSION_DENIED");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("PERMISSION_DENIED");
    log.setOffline(true);
    log.setOffline(false);
    await a.synced();
    expect(a.status).toBe("live");
    expect(a.writeError?.code).toBe("PERMISSION_DENIED");
    await a.update("increment", { by: 1 });
    expect(a.writable).toBe(true);
    await a.close();
  });

  it("a log whose first entry cannot be written yet: not writable until a connection stands on it", async () => {
    const log = new MemoryLog();
    log.setOffline(true);
    const a = await watched(log, { waitFor: "restored" });
    expect(await codeOf(a.update("increment", { by: 1 }, { outcomeTimeoutMs: 50 }))).toBe(
      "UNAVAILABLE",
    );
    expect(a.writable).toBe(false);
    expect(a.writeError?.message).toMatch(/first entry could not be written/);
    log.setOffline(false);
    await until(() => a.writable);
    expect(a.changes).toEqual([
      [false, "UNAVAILABLE"],
      [true, undefined],
    ]);
    expect((await a.update("increment", { by: 1 })).revision).toBe(2);
    await a.close();
  });

  it("a replaced log: not writable for good (stalled, LOG_REPLACED)", async () => {
    const log = new MemoryLog();
    const a = await watched(log.handle());
    log.recreate();
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("LOG_REPLACED");
    expect(a.status).toBe("stalled");
    expect(a.writeError?.code).toBe("LOG_REPLACED");
    expect(a.changes).toEqual([[false, "LOG_REPLACED"]]);
    await a.close();
    expect(a.writable).toBe(false);
  });

  it("closed: not writable (CLOSED)", async () => {
    const a = await watched(new MemoryLog());
    await a.close();
    expect([a.writable, a.writeError?.code]).toEqual([false, "CLOSED"]);
    expect(a.changes).toEqual([[false, "CLOSED"]]);
  });
});

describe("StatusHub writability (engine/status.ts, invariant 5)", () => {
  const err = (code: StateSyncError["code"]) => new StateSyncError(code, code);

  it("only failures that will repeat count; a reconnection clears all but a denial", () => {
    const hub = new StatusHub();
    const changes: Change[] = [];
    hub.on("writable", (w, e) => changes.push([w, e?.code]));
    for (const code of ["UNAVAILABLE", "UNKNOWN_OUTCOME", "VALIDATION", "RETRY_LIMIT"] as const) {
      hub.writeFailed(err(code));
    }
    hub.writeFailed(new Error("not ours"));
    expect(hub.writable).toBe(true);
    hub.writeFailed(err("STREAM_CONFIG"));
    hub.reconnected();
    hub.writeFailed(err("UNSUPPORTED_SERVER"));
    hub.writeFailed(err("PERMISSION_DENIED")); // a new reason, no new event
    hub.reconnected();
    expect(hub.writeError?.code).toBe("PERMISSION_DENIED");
    hub.wrote();
    expect(changes).toEqual([
      [false, "STREAM_CONFIG"],
      [true, undefined],
      [false, "UNSUPPORTED_SERVER"],
      [true, undefined],
    ]);
  });

  it("stalled is final; a listener that throws is reported", () => {
    const hub = new StatusHub();
    const errors: string[] = [];
    hub.on("error", (e) => errors.push(e.code));
    hub.on("writable", () => {
      throw new Error("boom");
    });
    hub.stall(err("UNSUPPORTED_FORMAT"));
    hub.wrote();
    hub.reconnected();
    expect([hub.writable, hub.writeError?.code]).toEqual([false, "UNSUPPORTED_FORMAT"]);
    expect(errors).toEqual(["UNSUPPORTED_FORMAT", "LISTENER_FAILED"]);
    expect(() => hub.on("writeable" as "writable", () => undefined)).toThrow(/unknown event/);
  });
});
