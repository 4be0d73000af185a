import { readFileSync } from "node:fs";
import { connect as connectTcp, type NatsConnection } from "nats";
import type { NatsConnectionLike } from "@statesync/node";

/**
 * The server configurations of docs/permissions.md, by name: each block is a fenced `conf` code
 * block right after a `<!-- config: <name> -->` marker. The tests run nats-server with them
 * verbatim, so the documentation is what is tested.
 */
export function documentedConfigs(): Record<string, string> {
  const doc = readFileSync(new URL("../../../../docs/permissions.md", import.meta.url), "utf8");
  const out: Record<string, string> = {};
  for (const m of doc.matchAll(/<!-- config: ([\w-]+) -->\s*```conf\n([\s\S]*?)```/g)) {
    out[m[1]!] = m[2]!;
  }
  return out;
}

/** Users of the documented configurations and their passwords (as the blocks spell them). */
export const PASSWORDS: Record<string, string> = {
  operator: "operator-secret",
  "flags-reader": "reader-secret",
  "flags-writer": "writer-secret",
  "tenant-a-writer": "tenant-a-secret",
  "tenant-a-reader": "tenant-a-reader-secret",
  "tenant-b-writer": "tenant-b-secret",
};

/** Connect options of a documented user: its password and its own inbox prefix. */
export function credentials(user: string): { user: string; pass: string; inboxPrefix: string } {
  const pass = PASSWORDS[user];
  if (pass === undefined) throw new Error(`no documented user ${user}`);
  return { user, pass, inboxPrefix: `_INBOX_${user}` };
}

/** A TCP connection as `user` (reconnecting quickly, forever). */
export function tcpAs(url: string, user: string): Promise<NatsConnection> {
  return connectTcp({
    servers: url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    ...credentials(user),
  });
}

/** A WebSocket connection (`nats.ws`) as `user`; Node 20 needs the `ws` package as WebSocket. */
export async function wsAs(
  url: string,
  user: string | undefined,
): Promise<NatsConnectionLike & { close(): Promise<void> }> {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = (await import("ws")).default;
  const { connect } = await import("nats.ws");
  return connect({
    servers: url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    ...(user === undefined ? {} : credentials(user)),
  });
}
