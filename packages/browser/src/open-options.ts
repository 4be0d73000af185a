/**
 * The options of `@statesync/browser`'s `openSynchronizer` as one zod schema (see
 * {@link openOptionsSchema}): the same checks, in the same words, as `@statesync/node`'s where the
 * option is the same (`snapshots`, `connectOptions`, the offline queue's owner), so that an
 * option Node refuses is refused here too. A new user's trial: `snapshots: true`, `{}` or `"idb"`
 * threw a raw `TypeError: e.load is not a function`, `null` read as "no snapshots"; once every
 * option was checked, the browser still took a store without `save` or `delete`, and said less
 * than Node of what to write.
 */
import {
  isConnectionLike,
  isNatsV3Connection,
  runtimeOpenOptionsSchema,
  snapshotsOptionSchema,
} from "@statesync/core";
import { z } from "zod/v4";
import { ownerPrefixSchema } from "./offline-setup.js";

/**
 * A WebSocket URL. `tls://` and `nats://` are TCP URLs, which a browser cannot dial: refused,
 * naming `wss://` (TLS the WebSocket itself enforces), rather than dialled over WebSocket, where
 * nats.ws would pick `wss://` or `ws://` by itself and a `tls://` would not say what it did.
 */
const wsUrl = z.string().superRefine((url, ctx) => {
  const tcp = /^(tls|nats):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (tcp !== undefined) {
    ctx.addIssue({
      code: "custom",
      message: `${tcp}:// is a TCP URL, which a browser cannot dial: use wss:// (TLS, enforced by the WebSocket) or ws://`,
    });
  } else if (!/^wss?:\/\/[^/\s]+/i.test(url) || !plausibleHost(url)) {
    ctx.addIssue({
      code: "custom",
      message: `servers must be ws:// or wss:// URLs (e.g. ws://127.0.0.1:8080)${
        url.includes(",") ? "; several servers go in an array, not one string with commas" : ""
      }`,
    });
  }
});
/**
 * Whether the URL's host can be a DNS name or an IP address: URL takes any host with a comma, so
 * `ws://n1,n2:8080` (hosts joined by commas, a new user's trial) was dialled as one host for ever.
 */
function plausibleHost(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return /^[A-Za-z0-9_.-]+$/.test(host) || /^\[[0-9A-Fa-f:.]+\]$/.test(host);
  } catch {
    return false;
  }
}
const fn = z.custom<unknown>((v) => typeof v === "function", "must be a function");

/**
 * zod schema of {@link OpenSynchronizerOptions}: core's `openJetStreamOptionsSchema` (every option
 * of `createSynchronizer` and `JetStreamLog` this function passes on) with the browser's own, so
 * that every wrong option is refused here, before anything connects, as "invalid
 * openSynchronizer options" with its path as written. Strict: an unknown key is refused.
 */
export const openOptionsSchema = runtimeOpenOptionsSchema({
  servers: z
    .union([wsUrl, z.array(wsUrl).min(1)], {
      error: "servers must be a ws:// or wss:// URL, or an array of them",
    })
    .optional(),
  connection: z
    .custom<unknown>(
      isConnectionLike,
      "connection must be a nats.ws connection (or @nats-io/nats-core's wsconnect) or a promise of one",
    )
    .optional(),
  // Node's words, but where the default store is.
  snapshots: snapshotsOptionSchema("IndexedDB (an IndexedDbSnapshotStore)"),
  onWarning: fn.optional(),
  keepSnapshotCurrent: z.boolean().optional(),
  saveOnHide: z.boolean().optional(),
  tabs: z.boolean().optional(),
  pending: z
    .union(
      [
        z.literal(false),
        z.object({
          owner: ownerPrefixSchema,
          store: fn,
          openQueueSlot: fn,
          drainOrphanedSlots: fn,
          sharePendingAcrossTabs: fn,
        }),
      ],
      { error: "pending must be offlineQueue(...) of @statesync/browser/offline, or false" },
    )
    .optional(),
})
  // Not imported on demand (see `jetstream`): said here rather than by the log's adapter.
  .refine((o) => o.jetstream !== undefined || !isNatsV3Connection(o.connection), {
    message:
      "a nats.js v3 connection needs @nats-io/jetstream's functions: pass jetstream: " +
      '{ jetstream, jetstreamManager } from "@nats-io/jetstream"',
    path: ["jetstream"],
  });
