import { join } from "node:path";
import {
  defineModel,
  openJetStreamSynchronizer,
  openSynchronizer,
  type NatsConnectionLike,
  type OpenSynchronizerOptions,
  type StateSynchronizer,
} from "@statesync/node";
import { connect, type NatsConnection } from "nats";
import { z } from "zod";

/** The model most benchmarks share: a counter (conditional increments) and a sequence mark. */
export const counterModel = defineModel({
  name: "bench-counter",
  state: z.object({ count: z.number().int(), mark: z.number().int() }),
  initial: { count: 0, mark: 0 },
  commands: {
    increment: {
      args: z.object({ by: z.number().int() }),
      apply(draft, { by }) {
        draft.count += by;
      },
    },
    mark: {
      args: z.object({ seq: z.number().int() }),
      apply(draft, { seq }) {
        draft.mark = seq;
      },
    },
  },
});
export type CounterSync = StateSynchronizer<
  (typeof counterModel)["initial"],
  (typeof counterModel)["commands"]
>;

type CounterOptions = Omit<
  OpenSynchronizerOptions<(typeof counterModel)["initial"], (typeof counterModel)["commands"]>,
  "model"
>;

/**
 * A counter replica over TCP on its own connection, with the defaults a user gets (snapshots on
 * disk every 100 entries, automatic compaction), its snapshot directory under `tmpDir`.
 */
export function openCounter(
  url: string,
  stream: string,
  tmpDir: string,
  options: Partial<CounterOptions> = {},
): Promise<CounterSync> {
  return openSynchronizer({
    servers: url,
    stream,
    model: counterModel,
    snapshotDir: join(tmpDir, "snapshots"),
    ...options,
  });
}

/**
 * A plain TCP connection (for raw publishes and NATS KV), with the options statesync's own
 * connections get (`noAsyncTraces`: no stack trace per request), so a ratio measures statesync's
 * code and not a nats.js option.
 */
export function tcp(url: string): Promise<NatsConnection> {
  return connect({ servers: url, maxReconnectAttempts: -1, noAsyncTraces: true });
}

/** A `nats.ws` connection in Node (`globalThis.WebSocket` from the `ws` package). */
export async function websocket(
  url: string,
): Promise<NatsConnectionLike & { close(): Promise<void> }> {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = (await import("ws")).default;
  const { connect: connectWs } = await import("nats.ws");
  return connectWs({ servers: url, maxReconnectAttempts: -1 });
}

/** A counter replica over WebSocket, built by core's `openJetStreamSynchronizer`. */
export async function openCounterWs(
  wsUrl: string,
  stream: string,
  options: { snapshots?: false } = {},
): Promise<CounterSync> {
  const nc = await websocket(wsUrl);
  return openJetStreamSynchronizer({
    connection: nc,
    closeConnection: () => nc.close(),
    stream,
    model: counterModel,
    snapshots: options.snapshots ?? false,
  });
}

/** Random bytes of `size` (payloads of raw publishes). */
export function payload(size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = 97 + ((i * 7) % 26);
  return b;
}

/**
 * Runs `workers` loops of `step` concurrently until `ms` elapse; returns the completed steps and
 * the elapsed time. Each loop awaits its step before starting the next (`workers` in flight).
 */
export async function runLoops(
  workers: number,
  ms: number,
  step: (worker: number) => Promise<unknown>,
): Promise<{ ops: number; elapsedMs: number }> {
  let ops = 0;
  let stop = false;
  const start = performance.now();
  const timer = setTimeout(() => (stop = true), ms);
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (!stop) {
        await step(w);
        ops += 1;
      }
    }),
  );
  clearTimeout(timer);
  return { ops, elapsedMs: performance.now() - start };
}
