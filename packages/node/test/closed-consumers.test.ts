import { openSynchronizer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { tcp, uniqueStream, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

/**
 * `close()` deletes the replica's ordered consumer before the connection goes: before, the
 * delete was sent without waiting and the connection closed first, so each closed replica's
 * consumer stayed until its `inactive_threshold` (5 min). A service that restarts often, or
 * opens short-lived replicas, piled them up (a fresh-eyes trial, stop 27).
 */
const ctx = useNatsServer();

describe("closing a live replica", () => {
  it("leaves no consumer on the server, with its own connection or a shared one", async () => {
    const own = uniqueStream("CLOSED_OWN");
    const onShared = uniqueStream("CLOSED_SHARED");
    const shared = await tcp(ctx.server.url);
    try {
      // Opened, written and closed at once, as a short-lived replica is: its follower's pull
      // (in which nats.js creates the consumer) may still be starting when close() comes.
      for (let i = 0; i < 3; i++) {
        const a = await openSynchronizer({
          servers: ctx.server.url,
          stream: own,
          model: counter,
          snapshots: false,
        });
        await a.update("increment", { by: 1 });
        await a.close();
        const b = await openSynchronizer({
          connection: shared,
          stream: onShared,
          model: counter,
          snapshots: false,
        });
        await b.update("increment", { by: 1 });
        await b.close();
      }
      const jsm = await shared.jetstreamManager();
      for (const stream of [own, onShared]) {
        const names: string[] = [];
        for await (const c of jsm.consumers.list(stream)) names.push(c.name);
        expect({ stream, names }).toEqual({ stream, names: [] });
      }
    } finally {
      await shared.close();
    }
  });
});
