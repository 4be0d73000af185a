import { getFreePort, openSynchronizer, StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { rejection, uniqueStream, until, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

/**
 * A call that gives up waiting for a connection says why there is none: the last reason the
 * connection failed, as its `cause` and in its message, beside the time it waited. Found by a
 * new user's trial: the README's `main.ts` pointed at a port where nothing listens failed its
 * update after 30 s with "the replica is offline: not connected to NATS within 5000 ms" (the
 * opening's request timeout, neither the time waited nor the cause); below 5 s the same call
 * named the refusal. A frozen server (SIGSTOP: it accepts connections and sends nothing) said
 * nothing at all until the connect timeout.
 */
const ctx = useNatsServer();

describe("a wait for a connection names why there is none", () => {
  it("refused: the update names the refusal and the time it waited, not the request timeout", async () => {
    const target = `nats://127.0.0.1:${await getFreePort()}`;
    const refused = `cannot connect to ${target}: CONNECTION_REFUSED`;
    const sync = await openSynchronizer({
      servers: target,
      stream: uniqueStream("REASON"),
      model: counter,
      snapshots: false,
      requestTimeoutMs: 200,
    });
    try {
      const e = await rejection(sync.update("increment", { by: 1 }, { outcomeTimeoutMs: 1_500 }));
      expect(e).toBeInstanceOf(StateSyncError);
      expect(e.code).toBe("UNAVAILABLE");
      expect(e.details).toMatchObject({ notSent: true, timedOut: true, outcomeTimeoutMs: 1_500 });
      expect(e.message).toContain(`waited ${e.details.waitedMs} ms`);
      expect(e.message).toContain(`the replica is offline: ${refused}`);
      expect(e.message).not.toContain("within 200 ms"); // the opening's wait, not this call's
      expect(e.cause).toBeInstanceOf(StateSyncError);
      expect(e.cause.message).toBe(refused);
      expect(e.cause.details.natsCode).toBe("CONNECTION_REFUSED");

      // fetchUpdates() waits for one opening: what it waited, and the reason.
      const f = await rejection(sync.fetchUpdates());
      expect(f.code).toBe("UNAVAILABLE");
      expect(f.message).toBe(
        `the log's first entry could not be written or read yet; nothing was appended (waited ${f.details.waitedMs} ms): ${refused}`,
      );
      expect(f.cause.message).toBe(refused);

      // history() waits for the connection itself: its own wait, and the reason.
      const h = await rejection(sync.history());
      expect(h.code).toBe("UNAVAILABLE");
      expect(h.message).toBe(`not connected to NATS within 200 ms: ${refused}`);
      expect(h.cause.message).toBe(refused);
      expect(h.details).toMatchObject({ notSent: true, timeoutMs: 200 });
    } finally {
      await sync.close();
    }
  });

  it("frozen (SIGSTOP): an UNAVAILABLE event says it has not answered, and so does the update", async () => {
    const target = ctx.server.url;
    await ctx.server.kill("SIGSTOP");
    try {
      const errors: StateSyncError[] = [];
      const sync = await openSynchronizer({
        servers: target,
        stream: uniqueStream("REASON"),
        model: counter,
        snapshots: false,
        requestTimeoutMs: 300,
        // Before the fix the first event came only when this timeout ended the attempt.
        connectOptions: { timeout: 4_000 },
        onError: (e) => errors.push(e),
      });
      try {
        expect(sync.status).toBe("offline");
        const event = await until(() => errors[0]);
        expect(event.code).toBe("UNAVAILABLE");
        const silent = new RegExp(`^cannot connect to ${target}: no answer within \\d+ ms`);
        expect(event.message).toMatch(silent);
        expect(event.details).toMatchObject({ noAnswer: true });

        const e = await rejection(sync.update("increment", { by: 1 }, { outcomeTimeoutMs: 1_000 }));
        expect(e.code).toBe("UNAVAILABLE");
        expect(e.details).toMatchObject({ notSent: true, timedOut: true });
        expect(e.message).toContain(`waited ${e.details.waitedMs} ms`);
        expect(e.message).toMatch(
          new RegExp(`the replica is offline: cannot connect to ${target}: no answer within`),
        );
        expect(e.cause).toBeInstanceOf(StateSyncError);
        expect(e.cause.message).toMatch(silent);
      } finally {
        await sync.close();
      }
    } finally {
      await ctx.server.kill("SIGCONT");
    }
  });
});
