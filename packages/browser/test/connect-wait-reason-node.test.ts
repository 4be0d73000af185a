// @statesync/browser's openSynchronizer over WebSocket (nats.ws; the `ws` package stands in for
// the browser's WebSocket in Node): a call that gives up waiting for a connection names why
// there is none, as the Node package's does (packages/node/test/connect-wait-reason.test.ts).
// Issue 12 read "Could not addCard: not connected to NATS within 5000 ms" after a 37 s wait.
import { openSynchronizer, StateSyncError } from "@statesync/browser";
import { getFreePort, startNatsServer, type NatsServer } from "@statesync/node";
import WebSocket from "ws";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tally as counter } from "../../node/test/support/models.js";

let server: NatsServer | undefined;
beforeAll(() => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
});
afterAll(async () => {
  await server?.kill("SIGCONT").catch(() => undefined);
  await server?.stop();
});

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

async function until<T>(fn: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const stream = () => `WAIT_${process.pid}_${Date.now().toString(36)}`;

it("nothing listening: the update names the failed WebSocket, not the request timeout", async () => {
  const target = `ws://127.0.0.1:${await getFreePort()}`;
  const errors: StateSyncError[] = [];
  const sync = await openSynchronizer({
    servers: target,
    stream: stream(),
    model: counter,
    snapshots: false,
    requestTimeoutMs: 200,
    onError: (e) => errors.push(e),
  });
  try {
    const reported = await until(() => errors[0]);
    expect(reported.message).toMatch(new RegExp(`^cannot connect to ${target}: `));
    const e = await rejection(sync.update("add", { by: 1 }, { outcomeTimeoutMs: 1_500 }));
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.details).toMatchObject({ notSent: true, timedOut: true, outcomeTimeoutMs: 1_500 });
    expect(e.message).toContain(`waited ${e.details.waitedMs} ms`);
    expect(e.message).toContain(`the replica is offline: cannot connect to ${target}: `);
    expect(e.message).not.toContain("within 200 ms");
    expect(e.cause).toBeInstanceOf(StateSyncError);
    expect(e.cause.message).toMatch(new RegExp(`^cannot connect to ${target}: `));

    const h = await rejection(sync.history());
    expect(h.code).toBe("UNAVAILABLE");
    expect(h.message).toMatch(
      new RegExp(`^not connected to NATS within 200 ms: cannot connect to ${target}: `),
    );
    expect(h.cause.message).toMatch(new RegExp(`^cannot connect to ${target}: `));
  } finally {
    await sync.close();
  }
});

it("a frozen server (SIGSTOP): an UNAVAILABLE event says it has not answered", async () => {
  const wsPort = await getFreePort();
  server = await startNatsServer({ wsPort });
  const target = `ws://127.0.0.1:${wsPort}`;
  await server.kill("SIGSTOP");
  const errors: StateSyncError[] = [];
  const sync = await openSynchronizer({
    servers: target,
    stream: stream(),
    model: counter,
    snapshots: false,
    requestTimeoutMs: 300,
    connectOptions: { timeout: 4_000 },
    onError: (e) => errors.push(e),
  });
  try {
    const event = await until(() => errors[0]);
    expect(event.code).toBe("UNAVAILABLE");
    const silent = new RegExp(`^cannot connect to ${target}: no answer within \\d+ ms`);
    expect(event.message).toMatch(silent);
    const e = await rejection(sync.update("add", { by: 1 }, { outcomeTimeoutMs: 1_000 }));
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.message).toContain(`waited ${e.details.waitedMs} ms`);
    expect(e.cause.message).toMatch(silent);
  } finally {
    await sync.close();
    await server.kill("SIGCONT");
  }
});
