import { isStateSyncError, MemoryLog, StateSyncError } from "@statesync/core";
import { StatusHub } from "../src/engine/status.js";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/**
 * An update that times out before it was sent says why the replica could not send it. Found by a
 * new user's run of the quick start with no server: after 30 s the update failed with "waited
 * 30001 ms without being sent (for the log, or behind other writers)", and the cause (connection
 * refused) went only to `onError`, which the quick start does not register.
 */
describe("an update that times out unsent names why the replica is not live", () => {
  it("an opening that failed: its error is in the message and the cause", async () => {
    const log = new MemoryLog();
    log.setOffline(true);
    const a = await open(log, { waitFor: "restored" });
    expect(a.status).not.toBe("live");
    const error = await a.update("increment", { by: 1 }, { outcomeTimeoutMs: 300 }).catch((e) => e);
    expect(isStateSyncError(error, "UNAVAILABLE"), String(error)).toBe(true);
    expect(error.details).toMatchObject({ notSent: true, timedOut: true });
    expect(error.message).toMatch(/without being sent .*; the replica is (offline|connecting): /);
    expect(isStateSyncError(error.cause, "UNAVAILABLE")).toBe(true);
    expect(error.message).toContain((error.cause as Error).message);
    await a.close();
  });

  // A review: any problem reported while offline was named, a failed snapshot save too.
  it("names connection problems only, and none once the replica is live again", () => {
    const hub = new StatusHub();
    const refused = new StateSyncError("UNAVAILABLE", "cannot connect: ECONNREFUSED");
    hub.set("offline", refused);
    hub.report(
      new StateSyncError("SNAPSHOT_FAILED", "saving the local snapshot failed: disk full"),
    );
    expect(hub.notLiveBecause).toBe(refused);
    const denied = new StateSyncError("PERMISSION_DENIED", "the server denied the stream");
    hub.report(denied);
    expect(hub.notLiveBecause).toBe(denied);
    hub.set("live");
    expect(hub.notLiveBecause).toBeUndefined();
    hub.report(new StateSyncError("UNAVAILABLE", "a read failed while live"));
    hub.set("offline"); // the log went offline without saying why: nothing stale is named
    expect(hub.notLiveBecause).toBeUndefined();
  });
});
