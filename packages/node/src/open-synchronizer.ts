import { stat } from "node:fs/promises";
import { join } from "node:path";
import {
  pendingOwnerSchema,
  pendingQueue,
  bindJetStreamModule,
  isConnectionLike,
  isPendingStoreLike,
  openJetStreamSynchronizer,
  optionsRefused,
  runtimeOpenOptionsSchema,
  snapshotsOptionSchema,
  StateSyncError,
  type CommandMap,
  type JetStreamV3Module,
  type NatsV3ConnectionLike,
  type OpenJetStreamOptions,
  type PendingStore,
  type SnapshotStore,
  type StateSynchronizer,
} from "@statesync/core";
import type { ConnectionOptions, NatsConnection } from "nats";
import { z } from "zod/v4";
import { connectInBackground } from "./background-connect.js";
import { isTcpServerUrl } from "./connect-nats.js";
import { FilePendingStore } from "./file-pending-store.js";
import { FileSnapshotStore } from "./file-snapshot-store.js";
import { withTlsOfServers } from "./tls-servers.js";

/**
 * Options of {@link openSynchronizer}: core's `OpenJetStreamOptions` (stream, key, model,
 * snapshotEvery, live, waitFor, clientId, compaction, onError, onStatus, ...) with the
 * connection given as `servers` (made with `nats` and owned by the replica) or `connection` (of
 * either nats.js line, never closed by it), and snapshots on disk by default.
 */
export interface OpenSynchronizerOptions<S, C extends CommandMap<S>> extends Omit<
  OpenJetStreamOptions<S, C>,
  "connection" | "closeConnection" | "snapshots" | "pending"
> {
  /**
   * NATS server URL(s) (`nats://host:4222`, `tls://host:4222`, `host:4222`); a connection is
   * made and owned by the replica. `tls://` URLs require TLS: a server that offers none is
   * refused before the credentials are sent (`UNSUPPORTED_SERVER`). A list mixing `tls://` with
   * other URLs is refused (`VALIDATION`): TLS holds for every server of a connection or none.
   */
  servers?: string | string[];
  /**
   * An existing connection (or a promise of one); never closed by the replica. Either nats.js
   * line: `nats` 2.x (v2), or `connect` of `@nats-io/transport-node` 3.x (v3). A v3 connection
   * needs `@nats-io/jetstream`'s functions: given as `jetstream`, or else imported from
   * `@nats-io/jetstream` (an optional peer dependency: install it beside the transport). Once
   * nats.js closes it for good (`nc.close()`, or its `maxReconnectAttempts` ran out: give it
   * `-1` to reconnect for ever) the replica stalls with `CONNECTION_CLOSED`.
   */
  connection?:
    NatsConnection | NatsV3ConnectionLike | Promise<NatsConnection | NatsV3ConnectionLike>;
  /**
   * `@nats-io/jetstream`'s `jetstream` and `jetstreamManager` (the module, or the two functions)
   * for a v3 `connection`; ignored for v2. Default: `await import("@nats-io/jetstream")` when a
   * v3 connection is seen (`VALIDATION` when it is not installed).
   */
  jetstream?: JetStreamV3Module;
  /**
   * Extra `nats` connect options with `servers`; defaults `maxReconnectAttempts: -1`,
   * `noAsyncTraces: true` (no stack trace captured per request: about a tenth of a publish's
   * client CPU; statesync's errors carry their own) and `pingInterval: 10_000` (ms; a server that
   * stops answering without closing the connection reads `offline` after 20-30 s, not nats.js's
   * 4-6 min; within about twice `requestTimeoutMs` of a request it leaves unanswered, whatever
   * the PINGs: `ConnectionGate.suspect`).
   */
  connectOptions?: Omit<ConnectionOptions, "servers">;
  /** A snapshot store, or false for none. Default: a `FileSnapshotStore` in `snapshotDir`. */
  snapshots?: SnapshotStore | false;
  /** Directory of the default `FileSnapshotStore`. Default `<cwd>/.statesync/snapshots`. */
  snapshotDir?: string;
  /**
   * The offline queue (docs/offline.md): updates made while the server is away are stored, shown
   * in `optimisticState`, and pushed in order, exactly once, when it is back, also after a
   * restart. `owner` names the queue (stable, unlike client ids: `"worker-1"`); one process at a
   * time may hold it, a second one opening the same `snapshotDir` with the same owner fails with
   * `QUEUE_LOCKED`. `store` defaults to a `FilePendingStore` in `snapshotDir`. Default: none.
   */
  pending?: { owner: string; store?: PendingStore } | false;
}

const tcpServer = z
  .string()
  .min(1)
  .refine(isTcpServerUrl, {
    // What was given, and the hint that fits it (a trial's `http://…` read "not one string with
    // commas").
    error: (issue) => {
      const given = String(issue.input);
      const hint = given.includes(",")
        ? "; several servers go in an array, not one string with commas"
        : /^wss?:/i.test(given)
          ? "; for ws:// use @statesync/browser's openSynchronizer"
          : "";
      return `servers must be nats:// or tls:// URLs or host:port (e.g. nats://127.0.0.1:4222), not ${JSON.stringify(given.slice(0, 200))}${hint}`;
    },
  });

/**
 * `pending` of Node's openSynchronizer: `{ owner, store? }` (a typo is an error) or false; issues
 * are reported at `pending.owner`, `pending.store` as the user wrote them.
 */
// Typed as a plain ZodType: the published declarations name no zod class newer than the oldest
// zod statesync accepts (z.preprocess's ZodPreprocess is not in zod 4.0 nor 3.25's zod/v4, and
// an app on those failed to compile: the install test).
const pendingSchema: z.ZodType<{ owner: string; store?: unknown } | undefined, unknown> =
  z.preprocess(
    (v) => (v === false ? undefined : v),
    z
      .strictObject(
        {
          owner: pendingOwnerSchema,
          store: z
            .custom<unknown>(isPendingStoreLike, "pending.store must be a PendingStore")
            .optional(),
        },
        {
          error: (issue) =>
            issue.code === "invalid_type"
              ? "pending must be { owner, store? }, or false"
              : undefined,
        },
      )
      .optional(),
  );

/**
 * zod schema of {@link OpenSynchronizerOptions}: core's `openJetStreamOptionsSchema` (every
 * option of `createSynchronizer` and `JetStreamLog` this function passes on) with Node's own, so
 * that every wrong option is refused here, before anything connects, as "invalid
 * openSynchronizer options" with its path as written. Strict: an unknown key is refused.
 */
export const openOptionsSchema = runtimeOpenOptionsSchema({
  servers: z
    .union([tcpServer, z.array(tcpServer).min(1)], {
      error: "servers must be a nats:// or tls:// URL or host:port, or an array of them",
    })
    .optional(),
  connection: z
    .custom<unknown>(
      isConnectionLike,
      "connection must be a nats connection (nats, or @nats-io/transport-node's connect) or a promise of one",
    )
    .optional(),
  snapshots: snapshotsOptionSchema("files in snapshotDir"),
  snapshotDir: z.string().min(1).optional(),
  pending: pendingSchema,
});

/** Default directory of snapshots: `.statesync/snapshots` under the working directory. */
export function defaultSnapshotDir(): string {
  return join(process.cwd(), ".statesync", "snapshots");
}

/**
 * Opens a replica of one state on NATS JetStream from Node. With `servers` it connects over TCP
 * with `nats` (`maxReconnectAttempts: -1`; a server that is down at start is retried in the
 * background by {@link connectInBackground} while the replica reports `offline`) and closes that
 * connection when the replica closes; with `connection` it uses and never closes the one given,
 * of either nats.js line (a v3 one is bound to `@nats-io/jetstream`'s functions with core's
 * `bindJetStreamModule`: `jetstream`, or the optional peer dependency imported on demand).
 * Snapshots go to a `FileSnapshotStore` in `snapshotDir` unless `snapshots` is given. The rest is
 * core's `openJetStreamSynchronizer` (a `JetStreamLog`, snapshot key `<stream>:<subject>`,
 * `createSynchronizer` with `waitFor: "synced"` by default).
 *
 * `tls://` URLs in `servers` require TLS (TLS options `{}` unless `connectOptions.tls` gives
 * them): a server that offers no TLS is refused, `UNSUPPORTED_SERVER`, before the credentials
 * are sent. A v3 `connection` is the caller's: its `tls` option is what requires TLS there.
 *
 * Throws `VALIDATION` for bad options ("invalid openSynchronizer options: ..." naming the option
 * as written, whichever layer takes it; a `servers` list mixing `tls://` with other URLs
 * included), and what `createSynchronizer` throws (`STREAM_CONFIG`, `MODEL_MISMATCH`,
 * `PERMISSION_DENIED`, `UNSUPPORTED_SERVER`, ...).
 */
export async function openSynchronizer<S, C extends CommandMap<S>>(
  options: OpenSynchronizerOptions<S, C>,
): Promise<StateSynchronizer<S, C>> {
  const parsed = openOptionsSchema.safeParse(options);
  if (!parsed.success) throw optionsRefused("openSynchronizer", parsed.error);
  const {
    servers,
    connection,
    jetstream,
    connectOptions,
    snapshots,
    snapshotDir,
    pending,
    ...rest
  } = options;
  // tls:// URLs require TLS; a mixed list or `tls: null` with them throws VALIDATION here.
  const connect =
    servers === undefined
      ? undefined
      : withTlsOfServers({
          name: `statesync${rest.clientId ? `-${rest.clientId}` : ""}`,
          // Fan-out (docs/fanout.md): thousands of replicas of one state reconnect after a
          // server restart spread over 2 s rather than nats.js's default 100 ms.
          ...(rest.fanout ? { reconnectJitter: 2_000 } : {}),
          ...connectOptions,
          servers,
        });
  if (snapshots === undefined) await checkSnapshotDir(snapshotDir ?? defaultSnapshotDir());
  const owned =
    connect === undefined
      ? undefined
      : connectInBackground(connect, { silentMs: rest.requestTimeoutMs });
  // A given v3 connection is bound now (a missing @nats-io/jetstream throws here), a promise
  // of one when it resolves.
  const given =
    connection === undefined
      ? undefined
      : connection instanceof Promise
        ? bindJetStreamModule(connection, jetstream ?? importJetStream)
        : await bindJetStreamModule(connection, jetstream ?? importJetStream);
  return openJetStreamSynchronizer<S, C>({
    ...rest,
    connection: owned ? owned.connection : given!,
    closeConnection: owned ? () => owned.cancel() : undefined,
    connectionErrors: owned ? (report) => owned.errors(report) : undefined,
    whyNotConnected: owned && (() => owned.whyNotConnected()),
    snapshots:
      snapshots === undefined
        ? new FileSnapshotStore(snapshotDir ?? defaultSnapshotDir())
        : snapshots,
    pending:
      pending &&
      pendingQueue({
        owner: pending.owner,
        store: pending.store ?? new FilePendingStore(snapshotDir ?? defaultSnapshotDir()),
      }),
    waitFor: rest.waitFor ?? "synced",
  });
}

/**
 * `@nats-io/jetstream` (an optional peer dependency), imported only when a v3 connection is
 * handed in. Throws `VALIDATION` when it is not installed.
 */
async function importJetStream(): Promise<JetStreamV3Module> {
  try {
    return (await import("@nats-io/jetstream")) as unknown as JetStreamV3Module;
  } catch (err) {
    throw new StateSyncError(
      "VALIDATION",
      "a nats.js v3 connection needs @nats-io/jetstream: npm install @nats-io/jetstream, or " +
        "pass jetstream: { jetstream, jetstreamManager } imported from it",
      { cause: err },
    );
  }
}

/** `VALIDATION` when `dir` exists and is not a directory (it is created on the first save). */
async function checkSnapshotDir(dir: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(dir)).isDirectory();
  } catch {
    return; // missing (created later) or unreadable (reported when a save fails)
  }
  if (!isDirectory) {
    throw new StateSyncError("VALIDATION", `snapshotDir ${dir} exists and is not a directory`, {
      details: { snapshotDir: dir },
    });
  }
}
