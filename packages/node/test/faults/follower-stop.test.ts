import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer, type NatsV3ConnectionLike } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { CLIENT_LINES, type ClientLine, type Closable } from "../support/client-lines.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { openLedger } from "../support/workload.js";

/**
 * A replica's `close()` waits for its follower's consumer requests only while their answer can
 * come (follower.ts `stop()`), each case on both nats.js lines and both servers:
 * - the creation cut: found in CI (lost-ack.test.ts timed out, once) and reproduced with a
 *   stalling event loop: close() took its whole `requestTimeoutMs` (60 s there). The follower's
 *   creation was sent just before the connection was cut; it gave up on it at the cut and made
 *   another, but `stop()` still waited for the first, and nats.js settles a request whose
 *   connection was lost only at its timeout;
 * - the creation held (a frozen server, a half-open connection: nothing comes back, nothing is
 *   cut): close() waited the whole `requestTimeoutMs` (30 s, a trial);
 * - the delete cut at close(): close() waited the whole 2 s for its answer (a trial: a flapping
 *   connection, close() at random moments).
 * Outcomes: close() resolves long before the wait it no longer makes.
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

/** A follower's consumer request of `kind` (its consumers are named `ssf_...`). */
const follower = (kind: "CREATE" | "DELETE") => (subject: string) =>
  subject.startsWith(`$JS.API.CONSUMER.${kind}.`) && subject.includes(".ssf_");

/**
 * Runs `use` with the proxy and a ledger replica on `line` behind it (`requestTimeoutMs`;
 * `pingInterval` for the connection), `arm` called on the proxy before the replica opens.
 */
async function behindProxy(
  line: ClientLine,
  options: { requestTimeoutMs: number; pingInterval: number; arm?: (proxy: TcpProxy) => void },
  use: (sync: Awaited<ReturnType<typeof openLedger>>, proxy: TcpProxy) => Promise<void>,
): Promise<void> {
  const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
  const owned: Closable[] = [];
  try {
    options.arm?.(proxy);
    const { requestTimeoutMs, pingInterval } = options;
    let nc: Closable | undefined;
    if (line.name === "v3") {
      nc = await line.tcp(proxy.url, { reconnectTimeWait: 100, pingInterval });
      owned.push(nc);
    }
    const sync = await openLedger({
      stream: uniqueStream("FSTOP"),
      clientId: "c",
      requestTimeoutMs,
      ...(nc
        ? { connection: nc as NatsV3ConnectionLike }
        : { servers: proxy.url, connectOptions: { pingInterval } }),
    });
    await use(sync, proxy);
  } finally {
    await Promise.all(owned.map((c) => c.close()));
    await proxy.stop();
  }
}

/** How long `sync.close()` takes, ms. */
async function closing(sync: { close(): Promise<void> }): Promise<number> {
  const started = Date.now();
  await sync.close();
  return Date.now() - started;
}

describe.each(CLIENT_LINES)("a follower's stop(), nats.js $name", (line) => {
  it("close() does not wait out the request timeout for a creation whose connection was cut", async () => {
    let cut!: Promise<void>;
    const arm = (proxy: TcpProxy) => (cut = proxy.cutAfterPublish(follower("CREATE")));
    await behindProxy(
      line,
      { requestTimeoutMs: 60_000, pingInterval: 1_000, arm },
      async (sync, proxy) => {
        await cut;
        expect(proxy.cuts).toBe(1);
        // Closed while the follower waits to make its next consumer (the first one's creation is
        // still unanswered in nats.js): the replica still commits meanwhile.
        await sync.update("increment", { opId: "c.1", by: 1 });
        expect(await closing(sync)).toBeLessThan(20_000);
      },
    );
  }, 45_000);

  it("close() does not wait out the request timeout for a creation that is never answered", async () => {
    let held!: Promise<void>;
    const arm = (proxy: TcpProxy) => (held = proxy.holdAfterPublish(follower("CREATE")));
    // statesync's own PING interval (10 s): nats.js drops a connection that stopped answering
    // after two unanswered PINGs, 20-30 s (openLedger's 1 s dropped it within 3 s).
    await behindProxy(
      line,
      { requestTimeoutMs: 30_000, pingInterval: 10_000, arm },
      async (sync) => {
        await held;
        await new Promise((r) => setTimeout(r, 300));
        expect(await closing(sync)).toBeLessThan(10_000);
      },
    );
  }, 45_000);

  it("close() does not wait for the answer of a delete whose connection was cut", async () => {
    await behindProxy(
      line,
      { requestTimeoutMs: 30_000, pingInterval: 1_000 },
      async (sync, proxy) => {
        await sync.update("increment", { opId: "c.1", by: 1 });
        await new Promise((r) => setTimeout(r, 500)); // the follower consumes
        const cut = proxy.cutAfterPublish(follower("DELETE"), { refuseForMs: 10_000 });
        const took = await closing(sync);
        expect(proxy.cuts).toBe(1);
        await cut;
        expect(took).toBeLessThan(1_000);
      },
    );
  }, 30_000);
});
