import {
  JetStreamLog,
  layoutIdentityPrefix,
  resolveLayout,
  StateSyncError,
  type JetStreamLogOptions,
  type SnapshotStore,
} from "@statesync/core";
import type { ConnectionOptions } from "nats.ws";
import { connectInBackground } from "../background-connect.js";
import type { LockManagerLike, TokenStore } from "./leadership.js";
import { TabLog } from "./tab-log.js";

/**
 * What tabs need to share a connection: Web Locks, `BroadcastChannel` and `localStorage` (for the
 * fencing token). Undefined where any is missing (or `localStorage` throws, as in some private
 * modes): then every tab is its own replica.
 */
export function tabSupport(): { locks: LockManagerLike; tokens: TokenStore } | undefined {
  try {
    const g = globalThis as {
      navigator?: { locks?: LockManagerLike };
      localStorage?: TokenStore;
    };
    const locks = g.navigator?.locks;
    const tokens = g.localStorage;
    if (!locks || !tokens || typeof BroadcastChannel !== "function") return undefined;
    tokens.getItem("statesync-probe");
    return { locks, tokens };
  } catch {
    return undefined;
  }
}

/**
 * A {@link TabLog} for the state at `layout` on `servers`: while this tab leads, a `JetStreamLog`
 * over its own `nats.ws` connection (made in the background); the connection's failed attempts
 * go to `report` (see `connectionErrors`), so a refused WebSocket makes the replica `offline` at
 * once in the leading tab too; a follower tab's `report` hears them through the leader's beats.
 * Throws `VALIDATION` for an invalid stream, key or subject prefix (`resolveLayout`).
 */
export function openTabLog(
  name: string,
  support: { locks: LockManagerLike; tokens: TokenStore },
  connectOptions: ConnectionOptions,
  layout: Omit<JetStreamLogOptions, "connection">,
): { log: TabLog; connectionErrors(report: (error: StateSyncError) => void): () => void } {
  let report: ((error: StateSyncError) => void) | undefined;
  const log = new TabLog({
    name,
    contiguous: layout.key === undefined,
    identityPrefix: layoutIdentityPrefix(
      resolveLayout(layout.stream, layout.key, layout.subjectPrefix),
    ),
    ...support,
    leaderLog() {
      const owned = connectInBackground(connectOptions, { silentMs: layout.requestTimeoutMs });
      const unwatch = owned.errors((e) => {
        report?.(e);
        log.noteLeadFailure(e);
      });
      const own = new JetStreamLog({
        ...layout,
        connection: owned.connection,
        whyNotConnected: () => owned.whyNotConnected(),
      });
      return {
        log: own,
        async close() {
          unwatch();
          await own.close().catch(() => undefined);
          await owned.cancel().catch(() => undefined);
        },
      };
    },
  });
  return {
    log,
    connectionErrors(r) {
      report = r;
      // A follower tab hears the leading tab's failed attempts (`TabLog.watchLeadFailures`).
      const unwatch = log.watchLeadFailures(r);
      return () => {
        report = undefined;
        unwatch();
      };
    },
  };
}

/**
 * `store`, saving only while no other tab leads: one tab writes the snapshot, not every tab. A
 * leader that gave the lead up as its page was left (`pagehide`) still saves its last one.
 */
export function savedByLeader(store: SnapshotStore, log: TabLog): SnapshotStore {
  return {
    load: (key) => store.load(key),
    save: async (key, record) => {
      if (!log.followsAnother) await store.save(key, record);
    },
    delete: (key) => store.delete(key),
    close: () => store.close?.() ?? Promise.resolve(),
  };
}

/** `store` that loads and never writes (a second, short-lived replica of this tab). */
export function readOnly(store: SnapshotStore): SnapshotStore {
  return {
    load: (key) => store.load(key),
    save: async () => undefined,
    delete: async () => undefined,
  };
}
