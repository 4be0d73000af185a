import { stateHash } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "../helpers.js";
import { classify, History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, verify } from "../support/workload.js";

/**
 * Issue 10, cases 7 and 8, on nats-server with the history checker:
 * - 7: two live writers each ran 60 `update`s; 53 of the 120 results paired a revision with a
 *   later state. Each result's `state` must be the state right after its own entry.
 * - 8: `close()` with unconditional appends in flight rejected them all `UNKNOWN_OUTCOME` within
 *   about 8 ms, though some or all were stored. `close()` waits for appends already sent; each
 *   caller learns what happened, and what it learns is what the log holds.
 */
describe("what an update resolves with (real nats-server)", () => {
  const ctx = useNatsServer();

  it("case 7: two live writers, 60 updates each: every result's state is the state at its revision", async () => {
    const stream = uniqueStream("RESULT");
    const replicas: Record<string, LedgerSync> = {
      a: await openLedger({ servers: ctx.server.url, stream, clientId: "a" }),
      b: await openLedger({ servers: ctx.server.url, stream, clientId: "b" }),
    };
    closeAtEnd(...Object.values(replicas));
    const history = new History();
    history.watchAll(replicas);
    const results = (
      await Promise.all(
        Object.entries(replicas).map(async ([name, sync]) => {
          const out = [];
          for (let i = 0; i < 60; i++) {
            const opId = history.nextOpId(name);
            history.invoke({ opId, client: name, kind: "conditional", by: 1 });
            const r = await sync.update("increment", { by: 1, opId });
            history.complete(opId, { status: "ok", revision: r.revision });
            out.push({ opId, r });
          }
          return out;
        }),
      )
    ).flat();
    await verify(history, replicas);
    for (const { opId, r } of results) {
      expect(r.state.ops.at(-1), `result of ${opId}`).toBe(opId);
      expect(stateHash(await replicas.a!.stateAt(r.revision))).toBe(stateHash(r.state));
    }
  });

  it("case 8: close() with 100 unconditional appends in flight: each learns its outcome, and it is the log's", async () => {
    const stream = uniqueStream("CLOSING");
    const writer = await openLedger({ servers: ctx.server.url, stream, clientId: "w" });
    closeAtEnd(writer);
    const history = new History();
    const sent = Array.from({ length: 100 }, () => {
      const opId = history.nextOpId("w");
      history.invoke({ opId, client: "w", kind: "unconditional", by: 1 });
      return writer.updateUnconditionally("increment", { by: 1, opId }).then(
        (r) => history.complete(opId, { status: "ok", revision: r.revision }),
        (e: unknown) => history.complete(opId, classify(e)),
      );
    });
    await writer.close();
    await Promise.all(sent);
    const outcomes = history.summary();
    // A local server answers every append sent well within the request timeout.
    expect(Object.keys(outcomes).filter((k) => k !== "ok" && k !== "failed:CLOSED")).toEqual([]);
    expect(history.ops.filter((o) => o.outcome?.status === "ok").length).toBeGreaterThan(0);
    const reader = await openLedger({ servers: ctx.server.url, stream, clientId: "reader" });
    closeAtEnd(reader);
    history.watch("reader", reader);
    await verify(history, { reader });
  });
});
