import { describe, expect, it } from "vitest";
import type { StateSyncError } from "@statesync/node";
import { tcp, uniqueStream, until, useNatsServer } from "../helpers.js";
import { closeAtEnd, openLedger, sleep } from "../support/workload.js";

/**
 * Found by a fresh-eyes trial (stop 9): an operator set `max_msgs` on a live stream and the
 * server restarted. After the reconnection the replica's follower met STREAM_CONFIG on every
 * restart: an event every 250 ms for as long as it ran, while its status said `live` and it no
 * longer followed. Now the problem is reported once, the status is `offline` while it lasts, and
 * the replica follows again (and says `live`) once the operator undoes the edit.
 */
describe("a stream edited to drop history, then a server restart (real nats-server)", () => {
  const ctx = useNatsServer();

  it("reports STREAM_CONFIG once per problem, is offline while it lasts, follows again after", async () => {
    const stream = uniqueStream("LIMRS");
    const errors: StateSyncError[] = [];
    const follower = await openLedger({
      servers: ctx.server.url,
      stream,
      clientId: "follower",
      streamCheckIntervalMs: 600_000,
      onError: (e) => errors.push(e),
    });
    closeAtEnd(follower);
    const admin = await tcp(ctx.server.url);
    const jsm = await admin.jetstreamManager();
    const config = (await jsm.streams.info(stream)).config;
    await jsm.streams.update(stream, { ...config, max_msgs: 50 });
    await admin.close();
    await ctx.server.kill("SIGKILL");
    await ctx.server.restart();
    await until(() => (follower.status === "offline" ? true : undefined), 20_000);
    await sleep(3_000); // a flood showed a dozen events by now
    const reported = errors.filter((e) => e.code === "STREAM_CONFIG");
    expect(reported.length).toBeGreaterThanOrEqual(1);
    expect(reported.length).toBeLessThanOrEqual(2); // the config check's and the follower's
    // The operator undoes the edit: the replica follows again.
    const fix = await tcp(ctx.server.url);
    await (await fix.jetstreamManager()).streams.update(stream, { ...config, max_msgs: -1 });
    await fix.close();
    const writer = await openLedger({ servers: ctx.server.url, stream, clientId: "writer" });
    closeAtEnd(writer);
    const { revision } = await writer.update("increment", { opId: "after", by: 1 });
    await follower.waitFor(revision);
    expect(follower.status).toBe("live");
    await Promise.all([writer.close(), follower.close()]);
  });
});
