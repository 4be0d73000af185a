import { openSynchronizer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { nextStatus, uniqueStream, useNatsServer } from "../helpers.js";
import { counter } from "../support/models.js";

/**
 * A server that stops answering without closing the connection (SIGSTOP here; in the field a
 * frozen VM, a half-open TCP connection after a NAT or laptop sleep) is noticed by PINGs only.
 * With nats.js's defaults (a PING every 2 min, stale after 2 unanswered) a replica opened with
 * `servers` and nothing else stayed `live` for 4 to 6 minutes. The replica must say `offline`
 * well within the test's 90 s, with the default options, and be `live` again once the server
 * answers. (Outcome, not timing: the test's timeout only bounds how long it may take.)
 */
const ctx = useNatsServer();

describe("a server that stops answering", () => {
  it("turns a replica opened with default options offline, then live once it answers", async () => {
    const sync = await openSynchronizer({
      servers: ctx.server.url,
      stream: uniqueStream("STOPPED"),
      model: counter,
      snapshots: false,
    });
    try {
      expect(sync.status).toBe("live");
      const offline = nextStatus(sync, "offline");
      await ctx.server.kill("SIGSTOP");
      try {
        await offline;
      } finally {
        await ctx.server.kill("SIGCONT");
      }
      await nextStatus(sync, "live");
      await sync.update("increment", { by: 1 });
      expect(sync.state.count).toBe(1);
    } finally {
      await sync.close();
    }
  }, 90_000);

  it("is noticed from a write that gets no answer, before the write's outcome is known", async () => {
    // PINGs 10 minutes apart: only the unanswered write can tell. Before the log probed the
    // connection after a request timeout, the replica said `live` until the update failed with
    // UNKNOWN_OUTCOME (outcomeTimeoutMs, 30 s), and `offline` only after that.
    const sync = await openSynchronizer({
      servers: ctx.server.url,
      stream: uniqueStream("STOPPED_WRITE"),
      model: counter,
      snapshots: false,
      connectOptions: { pingInterval: 600_000 },
    });
    const order: string[] = [];
    try {
      await sync.update("increment", { by: 1 });
      const offline = nextStatus(sync, "offline").then(() => order.push("offline"));
      await ctx.server.kill("SIGSTOP");
      let written: Promise<unknown>;
      try {
        written = sync.update("increment", { by: 1 }).then(
          () => order.push("settled"),
          () => order.push("settled"),
        );
        await Promise.race([offline, written]);
      } finally {
        await ctx.server.kill("SIGCONT");
      }
      await written;
      expect(order[0]).toBe("offline");
      await nextStatus(sync, "live");
      await sync.update("increment", { by: 1 });
      // The write cut off by the freeze was stored once, or not at all (UNKNOWN_OUTCOME).
      expect([2, 3]).toContain(sync.state.count);
    } finally {
      await sync.close();
    }
  }, 90_000);
});
