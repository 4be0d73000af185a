import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { NatsConnectionLike, SyncStatus } from "@statesync/core";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll } from "vitest";
import { connect as connectTcp, type ConnectionOptions, type NatsConnection } from "nats";
import { olderCommand } from "../../core/test/deep-models.js";

let counter = 0;
/** A stream name no other test uses. */
export function uniqueStream(prefix = "T"): string {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}

/** A TCP connection that reconnects quickly and forever. */
export function tcp(url: string, options: ConnectionOptions = {}): Promise<NatsConnection> {
  return connectTcp({
    servers: url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    ...options,
  });
}

/**
 * Appends `name(args)` to an own-layout stream as an older SDK's command entry (format 2: every
 * replica applies it unchecked, docs/format.md "Format 3"): the one way left to nest a state
 * deeper than `MAX_STATE_DEPTH`. Returns its revision.
 */
export async function appendOlderCommand(
  url: string,
  stream: string,
  name: string,
  args: unknown,
): Promise<number> {
  const nc = await tcp(url);
  try {
    return (await nc.jetstream().publish(`${stream}.log`, olderCommand(name, args))).seq;
  } finally {
    await nc.close();
  }
}

/** A WebSocket connection with `nats.ws` (Node 20 needs a global WebSocket: the `ws` package). */
export async function websocket(
  url: string,
  options: { user?: string; pass?: string } = {},
): Promise<NatsConnectionLike & { close(): Promise<void> }> {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = (await import("ws")).default;
  const { connect } = await import("nats.ws");
  return connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 100, ...options });
}

/** Polls `fn` until it returns a value other than undefined. */
export async function until<T>(
  fn: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() - start > timeoutMs) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The error a promise rejects with (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

export const bytes = (s: string) => new TextEncoder().encode(s);
export const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** The `code` of the StateSyncError a promise rejects with, or undefined when it resolves. */
export async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

/**
 * Starts a throwaway nats-server and a temporary directory for the current test file
 * (beforeAll) and removes both afterwards (afterAll; a server a test SIGSTOPped is resumed
 * first). Read `ctx.server` and `ctx.dir` in tests.
 */
export function useNatsServer(): { server: NatsServer; dir: string } {
  const ctx = {} as { server: NatsServer; dir: string };
  beforeAll(async () => {
    ctx.server = await startNatsServer();
    ctx.dir = await mkdtemp(path.join(tmpdir(), "statesync-test-"));
  });
  afterAll(async () => {
    await ctx.server?.kill("SIGCONT").catch(() => undefined); // a test may have stopped it
    await ctx.server?.stop();
    if (ctx.dir) await rm(ctx.dir, { recursive: true, force: true });
  });
  return ctx;
}

/** Resolves once `sync`'s status is `wanted` (at once when it is already). */
export function nextStatus(
  sync: { status: SyncStatus; on(event: "status", fn: (s: SyncStatus) => void): () => void },
  wanted: SyncStatus,
): Promise<void> {
  return new Promise((resolve) => {
    if (sync.status === wanted) return resolve();
    const off = sync.on("status", (s) => {
      if (s !== wanted) return;
      off();
      resolve();
    });
  });
}
