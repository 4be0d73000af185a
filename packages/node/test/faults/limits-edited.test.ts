import { describe, expect, it } from "vitest";
import type { StateSyncError } from "@statesync/node";
import { tcp, uniqueStream, until, useNatsServer } from "../helpers.js";
import { closeAtEnd, openLedger } from "../support/workload.js";

/**
 * Issue 10, case 5: an operator set `max_msgs: 3` on the stream while a writer was live; 10
 * conditional updates and one unconditional committed with no event, and the stream then held 3
 * entries; only new replicas saw STREAM_CONFIG. Live writers and followers now check the
 * configuration rarely (jittered; here every ~300 ms for the test) and after every reconnection,
 * and report a configuration that can drop history as a STREAM_CONFIG event.
 */
describe("a stream limit edited while replicas are live (real nats-server)", () => {
  const ctx = useNatsServer();

  it("the live writer and a follower report STREAM_CONFIG", async () => {
    const stream = uniqueStream("LIMITS");
    const events: Record<string, StateSyncError[]> = { writer: [], follower: [] };
    const open = (clientId: "writer" | "follower") =>
      openLedger({
        servers: ctx.server.url,
        stream,
        clientId,
        streamCheckIntervalMs: 300,
        onError: (e) => events[clientId]!.push(e),
      });
    const writer = await open("writer");
    const follower = await open("follower");
    closeAtEnd(writer, follower);
    await writer.update("increment", { opId: "w0", by: 1 });
    const admin = await tcp(ctx.server.url);
    try {
      const jsm = await admin.jetstreamManager();
      const si = await jsm.streams.info(stream);
      await jsm.streams.update(stream, { ...si.config, max_msgs: 3 });
    } finally {
      await admin.close();
    }
    for (const name of ["writer", "follower"] as const) {
      await until(() => (events[name]!.some((e) => e.code === "STREAM_CONFIG") ? true : undefined));
    }
    const reported = events.writer!.filter((e) => e.code === "STREAM_CONFIG");
    expect(reported[0]!.message).toMatch(/max_msgs/);
    // Once per distinct problem, not once per check.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(events.writer!.filter((e) => e.code === "STREAM_CONFIG")).toHaveLength(1);
  });
});
