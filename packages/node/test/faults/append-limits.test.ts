import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { classify, History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, verify } from "../support/workload.js";

/**
 * Issue 10, case 6: against a server stopped with SIGSTOP, `outcomeTimeoutMs: 500` and a signal
 * aborting after 500 ms rejected only after the JetStream request timeout (5,001 ms), with a
 * message saying "within 500 ms". The caller's limits now bound the attempt in flight. Outcomes
 * and orderings only: each call ends before a timer set well below the request timeout.
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.kill("SIGCONT").catch(() => undefined);
  await server?.stop();
});

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (e: { code?: string }) => e.code ?? String(e),
  );
const late = (ms: number) => new Promise<string>((r) => setTimeout(() => r("late"), ms));

describe("caller limits against a stopped server (SIGSTOP)", () => {
  it("outcomeTimeoutMs and signal end the attempt in flight, well before the request timeout", async () => {
    const stream = uniqueStream("LIMITS");
    const sync = await openLedger({
      servers: server.url,
      stream,
      clientId: "a",
      requestTimeoutMs: 20_000,
    });
    closeAtEnd(sync);
    const history = new History();
    history.watch("a", sync);
    /** Records the op `opId` of `kind` and how `call` ended, for the history checker. */
    const recorded = <T extends { revision: number }>(
      opId: string,
      kind: "conditional" | "unconditional",
      call: () => Promise<T>,
    ): Promise<T> => {
      history.invoke({ opId, client: "a", kind, by: 1 });
      const p = call();
      p.then(
        (r) => history.complete(opId, { status: "ok", revision: r.revision }),
        (e: unknown) => history.complete(opId, classify(e)),
      );
      return p;
    };
    await recorded("warm", "conditional", () => sync.update("increment", { opId: "warm", by: 1 }));
    await server.kill("SIGSTOP");
    try {
      const byTimeout = recorded("t", "conditional", () =>
        sync.update("increment", { opId: "t", by: 1 }, { outcomeTimeoutMs: 500 }),
      );
      const bySignal = recorded("s", "unconditional", () =>
        sync.updateUnconditionally(
          "increment",
          { opId: "s", by: 1 },
          { signal: AbortSignal.timeout(500) },
        ),
      );
      // The request timeout is 20 s: before the fix both waited for it.
      const deadline = late(8_000);
      const codes = [codeOf(byTimeout), codeOf(bySignal)].map((c) => Promise.race([c, deadline]));
      expect(await Promise.all(codes)).toEqual(["UNKNOWN_OUTCOME", "UNKNOWN_OUTCOME"]);
      await expect(byTimeout).rejects.toThrow(/within 500 ms/);
      await expect(bySignal).rejects.toThrow(/aborted/);
    } finally {
      await server.kill("SIGCONT");
    }
    // Once the server resumes: each of the two landed at most once, everywhere.
    const reader = await openLedger({ servers: server.url, stream, clientId: "reader" });
    closeAtEnd(reader);
    const replicas: Record<string, LedgerSync> = { a: sync, reader };
    history.watch("reader", reader);
    await verify(history, replicas);
    await Promise.all([sync.close(), reader.close()]);
  });
  it("close() with an unconditional append in flight to a stopped server ends within the request timeout (issue 10, case 8)", async () => {
    const stream = uniqueStream("CLOSESTOP");
    const sync = await openLedger({
      servers: server.url,
      stream,
      clientId: "c",
      requestTimeoutMs: 1_500,
    });
    const history = new History();
    history.watch("c", sync);
    history.invoke({ opId: "warm", client: "c", kind: "conditional", by: 1 });
    const warm = await sync.update("increment", { opId: "warm", by: 1 });
    history.complete("warm", { status: "ok", revision: warm.revision });
    await server.kill("SIGSTOP");
    let code: string;
    try {
      history.invoke({ opId: "x", client: "c", kind: "unconditional", by: 1 });
      const sent = sync.updateUnconditionally("increment", { opId: "x", by: 1 });
      sent.then(
        (r) => history.complete("x", { status: "ok", revision: r.revision }),
        (e: unknown) => history.complete("x", classify(e)),
      );
      // close() waits for the append already sent, but only as long as the append may take:
      // the server stays stopped, so close() ends when the append's own timeout ends it.
      const closing = sync.close().then(() => "closed");
      expect(await Promise.race([closing, late(12_000)])).toBe("closed");
      code = await codeOf(sent);
    } finally {
      await server.kill("SIGCONT");
    }
    // The caller learns that the outcome is unknown (the server may store it when it resumes).
    expect(["UNKNOWN_OUTCOME", "UNAVAILABLE"]).toContain(code);
    const reader = await openLedger({ servers: server.url, stream, clientId: "reader" });
    closeAtEnd(reader);
    history.watch("reader", reader);
    await verify(history, { reader });
    await reader.close();
  });
});
