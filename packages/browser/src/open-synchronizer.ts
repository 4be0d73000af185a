import {
  bindJetStreamModule,
  createSynchronizer,
  jetStreamSnapshotKey,
  openJetStreamSynchronizer,
  optionsRefused,
  splitLayoutOptions,
  type CommandMap,
  type JetStreamV3Module,
  type NatsV3ConnectionLike,
  type OpenJetStreamOptions,
  type SnapshotStore,
  type StateSynchronizer,
} from "@statesync/core";
import type { ConnectionOptions, NatsConnection } from "nats.ws";
import { connectInBackground } from "./background-connect.js";
import { IndexedDbSnapshotStore, type SnapshotStoreWarning } from "./indexeddb-snapshot-store.js";
import { keepSnapshotCurrent } from "./keep-snapshot-current.js";
import { openOptionsSchema } from "./open-options.js";
import { saveSnapshotOnHide } from "./save-on-hide.js";
import type { OfflineQueueSetup } from "./offline-setup.js";
import { openTabLog, readOnly, savedByLeader, tabSupport } from "./tabs/open-tab-log.js";

/**
 * Options of {@link openSynchronizer}: those of core's `OpenJetStreamOptions` (stream, key,
 * model, snapshotEvery, live, clientId, compaction, onError, onStatus, ...) with a WebSocket
 * connection and browser defaults. Give `servers` or `connection`, not both.
 */
export interface OpenSynchronizerOptions<S, C extends CommandMap<S>> extends Omit<
  OpenJetStreamOptions<S, C>,
  "connection" | "closeConnection" | "snapshots" | "pending"
> {
  /**
   * WebSocket URL(s) of NATS servers: `ws://host:port` or `wss://host:port` (a bare `host:port`
   * is refused: nats.ws would take it as `wss://`; so are `tls://` and `nats://`, TCP URLs a
   * browser cannot dial: `wss://` is TLS, which the WebSocket itself enforces). A connection is made and owned by the replica.
   */
  servers?: string | string[];
  /**
   * An existing connection (or a promise of one); never closed by the replica. Either nats.js
   * line: `nats.ws` 1.x (v2, the default line of this package), or `wsconnect` of
   * `@nats-io/nats-core` 3.x (v3), which needs `jetstream` too. Once nats.js closes it for good
   * (`nc.close()`, or its `maxReconnectAttempts` ran out: give it `-1` to reconnect for ever) the
   * replica stalls with `CONNECTION_CLOSED`.
   */
  connection?:
    NatsConnection | NatsV3ConnectionLike | Promise<NatsConnection | NatsV3ConnectionLike>;
  /**
   * `@nats-io/jetstream`'s `jetstream` and `jetstreamManager` (`import { jetstream,
   * jetstreamManager } from "@nats-io/jetstream"`, or the module), required with a v3
   * `connection` (`VALIDATION` without it), ignored for v2. Not imported on demand as in
   * `@statesync/node`: a bundler resolves every `import()` at build time, so an app without
   * `@nats-io/jetstream` installed would not build.
   */
  jetstream?: JetStreamV3Module;
  /** Extra `nats.ws` connect options with `servers` (defaults: see `connectInBackground`). */
  connectOptions?: Omit<ConnectionOptions, "servers">;
  /** A snapshot store, or false for none. Default: an `IndexedDbSnapshotStore` (closed with the replica). */
  snapshots?: SnapshotStore | false;
  /**
   * Where the stores this function builds report their failures (default `console.warn`): the
   * default snapshot store each call the connection failed under (it reopens with a backoff) and
   * a fallback to memory (`SnapshotStoreWarning`); the default offline queue's store its one
   * fallback to memory, `durable: false` from then on (`PendingQueueWarning`).
   */
  onWarning?: (warning: SnapshotStoreWarning) => void;
  /**
   * Save the snapshot after every applied batch, one save at a time, the newest state next (see
   * `keepSnapshotCurrent`), so that a reload restores the latest state. Default true; then
   * `snapshotEvery` defaults to 0 (off), since these saves make it redundant.
   */
  keepSnapshotCurrent?: boolean;
  /**
   * Also save the snapshot when the page is hidden or left (see `saveSnapshotOnHide`): best
   * effort, browsers may cut that write short. Default true.
   */
  saveOnHide?: boolean;
  /**
   * `"restored"` (default in the browser): resolves as soon as the stored state is restored,
   * without waiting for the server; `"synced"`: once caught up (or offline).
   */
  waitFor?: "synced" | "restored";
  /**
   * Share one connection among the tabs of this origin that open the same state on the same
   * `servers` (docs/offline.md, "Tabs"): one tab leads (Web Locks) and holds the connection, the
   * others reach the log through it over a `BroadcastChannel`; each tab stays a full replica.
   * Default true with `servers` where Web Locks, `BroadcastChannel` and `localStorage` exist;
   * false (or a given `connection`): this tab connects by itself.
   */
  tabs?: boolean;
  /**
   * The offline queue (docs/offline.md): `offlineQueue({ owner?, store? })` of
   * `@statesync/browser/offline` (an entry point of its own, so that an app without the queue
   * does not bundle it). Updates made while the server is away are stored in IndexedDB
   * (`IndexedDbPendingStore` unless `store` is given), shown at once in `optimisticState` (what
   * the React hooks show), and pushed in order, exactly once, when it is back, also after a
   * reload. Each tab holds a queue of its own, the first free slot `<owner>-<n>` (owner default
   * `"browser"`); a tab that reloads or dies leaves its slot, with its updates, to the next tab
   * that opens. Default: none (updates are sent at once, and fail after `outcomeTimeoutMs` while
   * offline).
   */
  pending?: OfflineQueueSetup | false;
}

/**
 * Opens a replica of one state on NATS JetStream from a browser: connects with `nats.ws`
 * (`servers`; a server that is down at start is retried in the background while the replica
 * reports `offline`) or uses `connection` (either nats.js line; a v3 one is bound to
 * `jetstream` with core's `bindJetStreamModule`), persists snapshots in an `IndexedDbSnapshotStore`
 * unless `snapshots` says otherwise, keeps it current after every applied batch and saves it when
 * the page is hidden, and opens the
 * replica with core's `openJetStreamSynchronizer` (default `waitFor: "restored"`: the page can
 * render the stored state before the server answers). `close()` of the replica closes the
 * connection and the default store only when it made them.
 *
 * Throws `VALIDATION` for bad options ("invalid openSynchronizer options: ..." naming the option
 * as written, whichever layer takes it), and what `openJetStreamSynchronizer` throws.
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
    onWarning,
    keepSnapshotCurrent: keepCurrent,
    saveOnHide,
    waitFor,
    tabs,
    pending,
    ...rest
  } = options;
  const saveAfterApply = (keepCurrent ?? true) && snapshots !== false;
  const support = servers !== undefined && tabs !== false ? tabSupport() : undefined;
  // Both throw VALIDATION before anything is opened (a v3 connection without `jetstream`; a bad
  // stream, key or prefix).
  const given = connection === undefined ? undefined : bindJetStreamModule(connection, jetstream);
  const snapshotKey =
    rest.snapshotKey ??
    jetStreamSnapshotKey({ stream: rest.stream, key: rest.key, subjectPrefix: rest.subjectPrefix });
  const offline = pending || undefined;
  const warn = onWarning ?? ((warning: unknown) => console.warn(warning));
  const pendingStore = offline?.store(warn);
  // Tabs that share a replica's connection push their queues in the order of their updates.
  const tabOrder = offline && support ? offline.tabPushOrder() : undefined;
  const queue =
    offline && pendingStore
      ? await offline.openQueueSlot(pendingStore, snapshotKey, offline.owner, undefined, tabOrder)
      : undefined;
  const ownedStore =
    snapshots === undefined ? new IndexedDbSnapshotStore({ onWarning: warn }) : undefined;
  const stops: Array<() => void> = [];
  const release = async () => {
    for (const stop of stops.splice(0)) stop();
    await ownedStore?.close();
    await queue?.store.close?.();
  };
  const connect = {
    name: `statesync${rest.clientId ? `-${rest.clientId}` : ""}`,
    ...connectOptions,
    servers: servers!,
  };
  let sync: StateSynchronizer<S, C>;
  let shareAs: { name: string; tabId: string } | undefined;
  if (support) {
    // Every option of JetStreamLog goes to the leading tab's log, none to the engine (`domain`
    // and `fanout` once went to createSynchronizer, which refused them: such a page never opened).
    const { layout, engine } = splitLayoutOptions(rest);
    const name = `statesync:${[servers!].flat().join(",")}:${snapshotKey}`;
    const tab = openTabLog(name, support, connect, layout);
    shareAs = { name, tabId: tab.log.tabId };
    const store = ownedStore ?? snapshots;
    try {
      sync = await createSynchronizer<S, C>({
        ...engine,
        log: tab.log,
        ownsLog: true,
        snapshotKey,
        snapshots: store ? savedByLeader(store, tab.log) : false,
        snapshotEvery: engine.snapshotEvery ?? (saveAfterApply ? 0 : undefined),
        // docs/fanout.md "Who compacts": a fan-out replica leaves compaction to the writer.
        compaction: engine.compaction ?? (layout.fanout ? false : undefined),
        waitFor: waitFor ?? "restored",
        connectionErrors: tab.connectionErrors,
        pending: queue,
        onClose: release,
      });
      if (offline && queue && pendingStore) {
        const { onError: _e, onStatus: _s, clientId: _c, ...quiet } = engine;
        // Its own store, quiet: a slot it cannot read in time falls back to memory for that
        // drain round only, which is no warning for the app (the board showed "cannot store
        // offline" for good after one: stop 26's trial). The same store when the app gave one.
        const drainStore = offline.store(() => undefined);
        stops.push(
          offline.drainOrphanedSlots({
            store: drainStore,
            key: snapshotKey,
            owner: offline.owner,
            own: queue.owner,
            active: () => tab.log.leading,
            online: () => tab.log.status === "online",
            channel: name,
            order: tabOrder,
            identity: async () => (await tab.log.info()).identity,
            revision: () => sync.revision,
            open: (p) =>
              createSynchronizer<S, C>({
                ...quiet,
                log: tab.log,
                snapshotKey,
                snapshots: store ? readOnly(store) : false,
                compaction: false,
                waitFor: "synced",
                pending: p,
                // Quiet but for the one thing only this replica can tell: a dead tab's queued
                // edits that could not be read (docs/offline.md, "Damaged records").
                onError: (e) => {
                  if (e.code === "CORRUPT_PENDING") engine.onError?.(e);
                },
              }),
          }),
        );
        if (drainStore !== pendingStore) stops.push(() => void drainStore.close?.());
      }
    } catch (err) {
      await tab.log.close();
      await release();
      throw err;
    }
  } else {
    const owned =
      servers === undefined
        ? undefined
        : connectInBackground(connect, { silentMs: rest.requestTimeoutMs });
    sync = await openJetStreamSynchronizer<S, C>({
      ...rest,
      snapshotEvery: rest.snapshotEvery ?? (saveAfterApply ? 0 : undefined),
      connection: owned ? owned.connection : given!,
      snapshots: ownedStore ?? snapshots,
      waitFor: waitFor ?? "restored",
      snapshotKey,
      pending: queue,
      connectionErrors: owned ? (report) => owned.errors(report) : undefined,
      whyNotConnected: owned && (() => owned.whyNotConnected()),
      closeConnection: async () => {
        await release();
        await owned?.cancel().catch(() => undefined);
      },
    });
  }
  if (saveAfterApply) stops.push(keepSnapshotCurrent(sync));
  if (saveOnHide ?? true) stops.push(saveSnapshotOnHide(sync));
  if (offline && shareAs && queue) {
    // Each tab's pending edits show in the other tabs at once, before the server has them.
    const shared = offline.sharePendingAcrossTabs(
      sync,
      rest.model,
      shareAs.name,
      shareAs.tabId,
      queue.owner,
      tabOrder,
    );
    stops.push(shared.stop);
    return shared.sync;
  }
  return sync;
}
