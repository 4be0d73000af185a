import { openSynchronizer } from "@statesync/node";
import type { NatsConnection } from "nats";
import { describe, expect, it } from "vitest";
import { codeOf, tcp, uniqueStream, useNatsServer } from "../helpers.js";
import { counter } from "../support/models.js";

/**
 * `close()` while the first opening waits on a server that does not answer (SIGSTOP): before,
 * the opening ended only at the JetStream request timeout, so `close()` waited for it (an update
 * in flight waited on the opening) and `synced()` and updates rejected only then. The request
 * timeout here (10 min) is far longer than the test's timeout: `close()` resolving at all, and
 * the waiters rejecting `CLOSED` before the server resumes, prove nobody waited for a request.
 */
const ctx = useNatsServer();

const REQUEST_TIMEOUT_MS = 600_000;

/**
 * Records the timers statesync's own code sets (its frames in packages/{core,node,browser}) until
 * they run or are cleared; `pending()` lists those still due. nats.js's own timers (a request it
 * sent, a connect in progress) are the client's and end with the connection.
 */
function statesyncTimers(): { pending(): string[]; restore(): void } {
  const set = globalThis.setTimeout;
  const clear = globalThis.clearTimeout;
  const due = new Map<unknown, string>();
  const ours = /\/packages\/(core|node|browser)\/(src|dist)\//;
  globalThis.setTimeout = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const stack = new Error().stack ?? "";
    const timer = set(
      (...a: unknown[]) => {
        due.delete(timer);
        fn(...a);
      },
      ms,
      ...args,
    );
    const frame = stack.split("\n").find((line) => ours.test(line));
    if (frame !== undefined) due.set(timer, `${ms} ms, ${frame.trim()}`);
    return timer;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((timer: Parameters<typeof clearTimeout>[0]) => {
    due.delete(timer);
    clear(timer);
  }) as typeof clearTimeout;
  return {
    pending: () => [...due.values()],
    restore: () => {
      globalThis.setTimeout = set;
      globalThis.clearTimeout = clear;
    },
  };
}

describe("close() while the first opening waits on a stopped server", () => {
  it.each([
    ["a connection given, stopped after it connected", "given"],
    ["servers, the server stopped before the replica connects", "servers"],
  ] as const)(
    "%s: close() and every waiter end CLOSED at once, nothing late",
    async (_, how) => {
      const stream = uniqueStream("CLOSEOPEN");
      let nc: NatsConnection | undefined;
      if (how === "given") nc = await tcp(ctx.server.url);
      const timers = statesyncTimers();
      await ctx.server.kill("SIGSTOP");
      const events: string[] = [];
      let closed = false;
      try {
        const sync = await openSynchronizer({
          ...(nc ? { connection: nc } : { servers: ctx.server.url }),
          stream,
          model: counter,
          snapshots: false,
          compaction: false,
          waitFor: "restored",
          requestTimeoutMs: REQUEST_TIMEOUT_MS,
          onError: (e) => events.push(`${closed ? "late " : ""}error ${e.code}`),
          onStatus: (s) => events.push(`${closed ? "late " : ""}status ${s}`),
        });
        const synced = codeOf(sync.synced());
        const update = codeOf(sync.update("increment", { by: 1 }));
        const unconditional = codeOf(sync.updateUnconditionally("increment", { by: 1 }));
        await sync.close();
        closed = true;
        expect(await Promise.all([synced, update, unconditional])).toEqual([
          "CLOSED",
          "CLOSED",
          "CLOSED",
        ]);
        expect(events.at(-1)).toBe("status closed");
        expect(timers.pending()).toEqual([]);
      } finally {
        timers.restore();
        await ctx.server.kill("SIGCONT");
      }
      // The server answers again: what it now answers reaches nobody, and nothing was appended.
      const check = await tcp(ctx.server.url);
      try {
        // After this round trip the answers to what the replica asked before SIGCONT are in;
        // the pause lets anything they could set off run.
        await nc?.flush();
        await new Promise((r) => setTimeout(r, 200));
        const jsm = await check.jetstreamManager();
        const stored = await jsm.streams.info(stream).then(
          (i) => i.state.messages,
          () => 0,
        );
        expect(stored).toBe(0);
        expect(events.filter((e) => e.startsWith("late"))).toEqual([]);
      } finally {
        await check.close();
        await nc?.close();
      }
    },
    30_000,
  );
});
