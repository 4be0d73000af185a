import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer, tcp } from "../helpers.js";
import { closeAtEnd, openLedger } from "../support/workload.js";

/**
 * Issue 10, case 3: A is live at revision 6; the stream is deleted and a new client creates it
 * again and writes up to sequence 6. A's next update resolved at revision 7, writing A's old
 * state into the new log, and A followed the new log's entries on top of its old state.
 * Expected: A stops with LOG_REPLACED (stalled, reads serve its last state), never appends to
 * the new log, and a replica opened afterwards starts cleanly on the new log.
 */
describe("the stream deleted and re-created under a live replica (real nats-server)", () => {
  const ctx = useNatsServer();

  it("the live replica stalls with LOG_REPLACED and never writes to the new log", async () => {
    const stream = uniqueStream("REPLACED");
    const a = await openLedger({ servers: ctx.server.url, stream, clientId: "a" });
    closeAtEnd(a);
    for (let i = 0; i < 5; i++) await a.update("increment", { opId: `a${i}`, by: 1 });
    expect(a.revision).toBe(6);
    const before = a.state;
    const admin = await tcp(ctx.server.url);
    try {
      await (await admin.jetstreamManager()).streams.delete(stream);
    } finally {
      await admin.close();
    }
    const b = await openLedger({ servers: ctx.server.url, stream, clientId: "b" });
    closeAtEnd(b);
    for (let i = 0; i < 5; i++) await b.update("increment", { opId: `b${i}`, by: 10 });
    expect(b.revision).toBe(6);
    // A: its follower or its next call finds the log replaced; its update never lands.
    const update = await a.update("increment", { opId: "a-late", by: 1 }).catch((e) => e);
    expect(update.code).toBe("LOG_REPLACED");
    expect(a.status).toBe("stalled");
    expect(a.stallReason?.code).toBe("LOG_REPLACED");
    expect(a.state).toEqual(before); // reads serve its last state
    await b.fetchUpdates();
    expect(b.revision).toBe(6);
    expect(b.state.ops).toEqual(["b0", "b1", "b2", "b3", "b4"]);
    // Opening again starts cleanly on the new log.
    const again = await openLedger({ servers: ctx.server.url, stream, clientId: "a2" });
    closeAtEnd(again);
    expect(again.status).toBe("live");
    expect(again.state).toEqual(b.state);
  });
});
