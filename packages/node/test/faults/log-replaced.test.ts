import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer, tcp, until } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

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

  async function deleteStream(stream: string): Promise<void> {
    const admin = await tcp(ctx.server.url);
    try {
      await (await admin.jetstreamManager()).streams.delete(stream);
    } finally {
      await admin.close();
    }
  }

  it("a replica that only follows stalls with LOG_REPLACED, never following the new log's entries; the history checks out", async () => {
    const stream = uniqueStream("REPLACED_F");
    const replicas: Record<string, LedgerSync> = {
      w: await openLedger({ servers: ctx.server.url, stream, clientId: "w" }),
      follower: await openLedger({ servers: ctx.server.url, stream, clientId: "follower" }),
    };
    closeAtEnd(...Object.values(replicas));
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(history, [{ name: "w", sync: replicas.w!, kind: "mixed" }]);
    try {
      await workload.waitForOk(10);
    } finally {
      await workload.stop();
    }
    await verify(history, replicas, { withLog: true });
    const before = replicas.follower!.state;
    await deleteStream(stream);
    // A new log, longer than the old one: the old follower must not take its entries as its own.
    const b = await openLedger({ servers: ctx.server.url, stream, clientId: "b" });
    closeAtEnd(b);
    for (let i = 0; i < before.ops.length + 5; i++) {
      await b.update("increment", { opId: `b${i}`, by: 10 });
    }
    const follower = replicas.follower!;
    await until(() => (follower.status === "stalled" ? true : undefined), 30_000);
    expect(follower.stallReason?.code).toBe("LOG_REPLACED");
    expect(follower.state).toEqual(before);
    expect(follower.state.ops.some((op) => op.startsWith("b"))).toBe(false);
  });

  it("a live replica whose stream is deleted and not created again stalls with LOG_REPLACED", async () => {
    const stream = uniqueStream("DELETED");
    const a = await openLedger({ servers: ctx.server.url, stream, clientId: "a" });
    closeAtEnd(a);
    for (let i = 0; i < 3; i++) await a.update("increment", { opId: `a${i}`, by: 1 });
    const before = a.state;
    await deleteStream(stream);
    await until(() => (a.status === "stalled" ? true : undefined), 30_000);
    expect(a.stallReason?.code).toBe("LOG_REPLACED");
    expect(a.state).toEqual(before);
    const update = await a.update("increment", { opId: "late", by: 1 }).catch((e) => e);
    expect(update.code).toBe("LOG_REPLACED");
  });

  // Found by a fresh-eyes trial (stop 25, 1 of 9 runs): a replica whose update was being
  // appended when its stream was deleted said `live` and `writable` until the update's
  // outcomeTimeoutMs, then rejected UNKNOWN_OUTCOME: every re-send met "no responders", taken
  // for a server that is down. A replica that does not follow has only its appends to find out.
  it("an update re-sent after the stream was deleted finds it gone and stops the replica with LOG_REPLACED", async () => {
    const stream = uniqueStream("DELETED");
    const a = await openLedger({ servers: ctx.server.url, stream, clientId: "a", live: false });
    closeAtEnd(a);
    await a.update("increment", { opId: "a0", by: 1 });
    await deleteStream(stream);
    const update = await a
      .update("increment", { opId: "a1", by: 1 }, { outcomeTimeoutMs: 20_000 })
      .catch((e) => e);
    // Its first send met "no responders": no stream took it, nothing was stored (stop 27; it
    // was taken as an unknown outcome before); the re-send found the stream gone (before that:
    // "no answer from the log within 20000 ms").
    expect(update.code).toBe("LOG_REPLACED");
    expect(update.message).toMatch(/was deleted/);
    expect(a.status).toBe("stalled");
    expect(a.stallReason?.code).toBe("LOG_REPLACED");
    expect(a.writable).toBe(false);
  });

  // A trial (both servers): the stream deleted and created again with the same configuration
  // within milliseconds, under writers of unconditional commands. Their commands landed at
  // revision 1 of the new stream and resolved as applied; the new stream, which never had a
  // genesis, then failed every opening TRUNCATED ("a replica that still holds the state writes
  // it back": none could). A replica that does not follow has nothing to notice the re-creation
  // by before its next command: the window, made deterministic.
  it("a command sent into a stream created again rejects LOG_REPLACED, and the new stream opens from the initial state", async () => {
    const stream = uniqueStream("RECREATED");
    const a = await openLedger({ servers: ctx.server.url, stream, clientId: "a", live: false });
    closeAtEnd(a);
    for (let i = 0; i < 5; i++) await a.update("increment", { opId: `a${i}`, by: 1 });
    const admin = await tcp(ctx.server.url);
    try {
      const jsm = await admin.jetstreamManager();
      const { config } = await jsm.streams.info(stream);
      await jsm.streams.delete(stream);
      await jsm.streams.add(config);
    } finally {
      await admin.close();
    }
    const late = await a
      .updateUnconditionally("increment", { opId: "a-late", by: 1 })
      .catch((e) => e);
    expect(late).toMatchObject({ code: "LOG_REPLACED", details: { storedAt: 1, revision: 6 } });
    expect(a.status).toBe("stalled");
    const errors: string[] = [];
    const onError = (e: { code: string }) => void errors.push(e.code);
    const b = await openLedger({ servers: ctx.server.url, stream, clientId: "b", onError });
    closeAtEnd(b);
    expect(b.status).toBe("live");
    expect(b.state.ops).toEqual([]); // the stray was meant for the old log's state
    expect(errors).toContain("CORRUPT_ENTRY");
    await b.update("increment", { opId: "b0", by: 10 });
    const c = await openLedger({ servers: ctx.server.url, stream, clientId: "c" });
    closeAtEnd(c);
    await until(() => c.revision === b.revision);
    expect(c.state).toEqual(b.state);
  });
});
