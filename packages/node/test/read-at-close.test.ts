import { defineModel, openSynchronizer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { codeOf, uniqueStream, useNatsServer } from "./helpers.js";
import { TcpProxy } from "./support/tcp-proxy.js";

/**
 * A fresh-eyes trial: `history()` and `stateAt()` in flight when `close()` was called ended
 * seconds later with `CONNECTION_CLOSED` ("the log's connection is closed for good": the replica
 * had closed its own connection under them; its advice, a new replica on a new connection, is
 * wrong) or `UNAVAILABLE ... TIMEOUT`, and nats.js printed "aborting resetPending - connection is
 * closed" (the pull's idle-heartbeat monitor, still running on the closed connection).
 * docs/guarantees.md promises `CLOSED`. Now they reject `CLOSED`, and the replica's log stops
 * their pulls before the replica closes the connection it owns.
 *
 * The reads are caught in flight without timing: the replica connects through a proxy that,
 * once the first pull of a read is sent, lets nothing the server sends reach the replica (the
 * connection stays open), so no read can finish before `close()`.
 */
const ctx = useNatsServer();

const model = defineModel({
  name: "read-at-close",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { add: { args: z.object({ pad: z.string() }), apply: (d) => void (d.n += 1) } },
});

/**
 * Records the timers and intervals nats.js's JetStream code sets (a frame in its `jetstream/`
 * on the stack: a pull's idle-heartbeat monitor, its expiry) until they run once, or are
 * cleared; `pending()` lists those still due. A pull left running when its connection closes
 * keeps its heartbeat monitor, which later prints "aborting resetPending - connection is closed".
 */
function jetStreamTimers(): { pending(): string[]; restore(): void } {
  const g = globalThis as unknown as Record<string, (...a: unknown[]) => unknown>;
  const saved = {
    setTimeout: g.setTimeout!,
    clearTimeout: g.clearTimeout!,
    setInterval: g.setInterval!,
    clearInterval: g.clearInterval!,
  };
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 50;
  const due = new Map<unknown, string>();
  const theirs = /node_modules\/nats\/lib\/jetstream\//;
  for (const [set, clear, once] of [
    ["setTimeout", "clearTimeout", true],
    ["setInterval", "clearInterval", false],
  ] as const) {
    g[set] = (fn: unknown, ms?: unknown, ...args: unknown[]) => {
      const stack = new Error().stack ?? "";
      const timer = saved[set](
        (...a: unknown[]) => {
          if (once) due.delete(timer);
          (fn as (...a: unknown[]) => void)(...a);
        },
        ms,
        ...args,
      );
      const frame = stack.split("\n").find((line) => theirs.test(line));
      if (frame !== undefined) due.set(timer, `${set} ${String(ms)} ms, ${frame.trim()}`);
      return timer;
    };
    g[clear] = (timer: unknown) => {
      due.delete(timer);
      return saved[clear](timer);
    };
  }
  return {
    pending: () => [...due.values()],
    restore: () => {
      Object.assign(g, saved);
      Error.stackTraceLimit = limit;
    },
  };
}

describe("history() and stateAt() in flight at close(), on nats-server", () => {
  it("reject CLOSED, and leave no pull running in nats.js on the connection closed", async () => {
    const stream = uniqueStream("READCLOSE");
    const writer = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model,
      snapshots: false,
    });
    const pad = "x".repeat(16 * 1024);
    await Promise.all(
      Array.from({ length: 200 }, () => writer.updateUnconditionally("add", { pad })),
    );
    const latest = writer.revision;
    await writer.close();

    // One read per replica: a second read's consumer creation, in flight when the held
    // connection closes, is retried by nats.js after a backoff (Known limits), whatever statesync
    // does; the pull of a read is what this test holds.
    for (const read of ["history", "stateAt"] as const) {
      const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
      try {
        const sync = await openSynchronizer({
          servers: proxy.url, // a connection the replica owns, and closes
          stream,
          model,
          snapshots: false,
          live: false,
        });
        const pulling = proxy.holdAfterPublish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.`);
        const timers = jetStreamTimers();
        try {
          const code = codeOf(read === "history" ? sync.history() : sync.stateAt(latest));
          await pulling; // the read's pull is sent and will never be answered
          await sync.close();
          expect(await code).toBe("CLOSED");
          // Nothing of the read's pull is left running in nats.js on the closed connection.
          expect(timers.pending()).toEqual([]);
        } finally {
          timers.restore();
        }
      } finally {
        await proxy.stop();
      }
    }
  }, 60_000);
});
