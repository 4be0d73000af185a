import type { StateSyncError } from "./errors.js";
import { JetStreamLog, type FanoutOptions } from "./jetstream/jetstream-log.js";
import { resolveLayout } from "./jetstream/layout.js";
import type { NatsConnectionLike } from "./jetstream/nats-types.js";
import type { CommandMap } from "./model.js";
import { openJetStreamOptionsSchema, optionsRefused } from "./open-jetstream-options.js";
import { createSynchronizer } from "./synchronizer.js";
import type { CreateSynchronizerOptions, StateSynchronizer } from "./synchronizer-types.js";

/**
 * Options of {@link openJetStreamSynchronizer}: where the state lives in JetStream (the
 * `JetStreamLogOptions` fields) plus the `createSynchronizer` options. Runtime packages fill
 * `connection` (and `closeConnection` when they made it) and `snapshots`.
 */
export interface OpenJetStreamOptions<S, C extends CommandMap<S>> extends Omit<
  CreateSynchronizerOptions<S, C>,
  "log" | "ownsLog" | "onClose"
> {
  /** A nats.js v2 connection (`nats` or `nats.ws`), or a promise of one while still connecting. */
  connection: NatsConnectionLike | Promise<NatsConnectionLike>;
  /**
   * Releases the connection when the replica closes, or when opening fails. Give it only for a
   * connection the replica owns; without it the connection is left open.
   */
  closeConnection?: () => Promise<void>;
  /**
   * Why a pending `connection` is not made yet (see `JetStreamLogOptions.whyNotConnected`):
   * runtime packages give their background connection's.
   */
  whyNotConnected?: () => StateSyncError | undefined;
  /** Stream name (see `JetStreamLogOptions.stream`). */
  stream: string;
  /** Key in a shared stream (see `JetStreamLogOptions.key`); without it the state owns `stream`. */
  key?: string;
  /** Subject prefix (see `JetStreamLogOptions.subjectPrefix`). */
  subjectPrefix?: string;
  /** Create the stream when missing (default true). */
  create?: boolean;
  /** Replicas of a created stream (default 1). */
  replicas?: number;
  /** JetStream request timeout, ms (default 5000). */
  requestTimeoutMs?: number;
  /** JetStream domain of the stream, for clients of a leaf node (see `JetStreamLogOptions.domain`). */
  domain?: string;
  /**
   * Fan-out (see `JetStreamLogOptions.fanout`, docs/fanout.md): the live follower subscribes to
   * the stream's republished entries instead of creating a consumer. Such a replica does not
   * compact unless `compaction` is given: with thousands of followers of one state, compaction
   * is the writer's (or an operator's) job, not every reader's.
   */
  fanout?: boolean | FanoutOptions;
}

/** The names of {@link JetStreamLayoutOptions}. */
type LayoutKey =
  | "stream"
  | "key"
  | "subjectPrefix"
  | "create"
  | "replicas"
  | "requestTimeoutMs"
  | "domain"
  | "fanout";

/**
 * The `JetStreamLog` options of an opening that say where the state lives and how its log is
 * reached (stream, key, subjectPrefix, create, replicas, requestTimeoutMs, domain, fanout): every
 * one goes to the log, none to `createSynchronizer` (which refuses them).
 */
export type JetStreamLayoutOptions = Pick<OpenJetStreamOptions<unknown, never>, LayoutKey>;

/**
 * Splits an opening's options into its {@link JetStreamLayoutOptions} (`layout`, each key
 * present, undefined when not given) and the rest (`engine`, for `createSynchronizer`). Shared by
 * {@link openJetStreamSynchronizer} and the browser's tabs, whose leading tab builds the log.
 */
export function splitLayoutOptions<O extends JetStreamLayoutOptions>(
  options: O,
): { layout: Pick<O, LayoutKey>; engine: Omit<O, LayoutKey> } {
  const {
    stream,
    key,
    subjectPrefix,
    create,
    replicas,
    requestTimeoutMs,
    domain,
    fanout,
    ...engine
  } = options;
  const layout = { stream, key, subjectPrefix, create, replicas, requestTimeoutMs, domain, fanout };
  return { layout, engine };
}

/**
 * The default snapshot-store key of a state in JetStream: `<stream>:<subject>`, where the subject
 * is `<prefix>.log` (own stream) or `<prefix>.<key>` (shared stream) and the prefix defaults to
 * the stream name. Throws `VALIDATION` for an invalid stream, key or prefix.
 */
export function jetStreamSnapshotKey(location: {
  stream: string;
  key?: string | undefined;
  subjectPrefix?: string | undefined;
}): string {
  const layout = resolveLayout(location.stream, location.key, location.subjectPrefix);
  return `${layout.stream}:${layout.subject}`;
}

/**
 * Opens a replica of one state on NATS JetStream over a connection a runtime package made:
 * builds a `JetStreamLog` (lazily opened, so a pending connection leaves the replica `offline`
 * rather than failing), keys the snapshot with {@link jetStreamSnapshotKey} unless `snapshotKey`
 * is given, and calls `createSynchronizer` with `ownsLog: true`; `close()` of the replica then
 * closes the log and calls `closeConnection`.
 *
 * Throws `VALIDATION` for bad options ("invalid openJetStreamSynchronizer options: ...", whichever
 * layer takes the option; see `openJetStreamOptionsSchema`) and what `createSynchronizer` throws
 * (`STREAM_CONFIG`, `MODEL_MISMATCH`, `PERMISSION_DENIED`, ...); on failure the log is closed and
 * `closeConnection` called.
 */
export async function openJetStreamSynchronizer<S, C extends CommandMap<S>>(
  options: OpenJetStreamOptions<S, C>,
): Promise<StateSynchronizer<S, C>> {
  // Called once, whether by the replica's close() (also run when its start fails) or below.
  let released: Promise<void> | undefined;
  const close = options.closeConnection;
  const release = () => (released ??= typeof close === "function" ? close() : Promise.resolve());
  let log: JetStreamLog | undefined;
  try {
    const parsed = openJetStreamOptionsSchema.safeParse(options);
    if (!parsed.success) throw optionsRefused("openJetStreamSynchronizer", parsed.error);
    const { connection, closeConnection: _release, whyNotConnected, ...rest } = options;
    const { layout, engine: synchronizerOptions } = splitLayoutOptions(rest);
    log = new JetStreamLog({ connection, whyNotConnected, ...layout });
    // Every option of createSynchronizer passes through (one listed by hand here was once
    // dropped: `upgrade: "manual"` then behaved as "on-open" on JetStream).
    return await createSynchronizer<S, C>({
      ...synchronizerOptions,
      // docs/fanout.md "Who compacts": a fan-out replica leaves compaction to the writer.
      compaction: synchronizerOptions.compaction ?? (layout.fanout ? false : undefined),
      log,
      snapshotKey: options.snapshotKey ?? `${log.stream}:${log.subject}`,
      ownsLog: true,
      onClose: release,
    });
  } catch (err) {
    await log?.close().catch(() => undefined);
    await release().catch(() => undefined);
    throw err;
  }
}
