/**
 * The system under the chaos test: one nats-server, and replicas of the ledger model, each
 * connected through its own TCP proxy (to cut or pause its connection) and each with its own
 * snapshot directory (so a replica closed and opened again restores from its snapshot).
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { openSynchronizer, type NatsServer } from "@statesync/node";
import type { History, LedgerSync } from "../support/checker.js";
import { ledger } from "../support/models.js";
import { TcpProxy } from "../support/tcp-proxy.js";

/** One replica slot: its proxy, its current synchronizer (undefined while closed). */
export interface Slot {
  readonly name: string;
  readonly proxy: TcpProxy;
  readonly snapshotDir: string;
  sync: LedgerSync | undefined;
  /** Set while closing or opening: no other reopen may start. */
  busy: boolean;
  /** Stops the history's watch of the current synchronizer. */
  unwatch: (() => void) | undefined;
}

/** Options every replica of a run opens with. */
export interface ReplicaOptions {
  readonly stream: string;
  readonly requestTimeoutMs: number;
  /** Automatic compaction after this many entries (jitter 0.5), or false. */
  readonly autoCompaction: number | false;
}

/** The replicas of one run and how to open, close and hurt them. */
export class ChaosSystem {
  readonly slots: Slot[] = [];

  private constructor(
    readonly server: NatsServer,
    readonly options: ReplicaOptions,
    private readonly history: History,
  ) {}

  /** Starts one proxy per replica in front of `server`; replicas are opened by {@link open}. */
  static async start(
    server: NatsServer,
    dir: string,
    count: number,
    options: ReplicaOptions,
    history: History,
  ): Promise<ChaosSystem> {
    const system = new ChaosSystem(server, options, history);
    for (let i = 0; i < count; i++) {
      const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
      const snapshotDir = path.join(dir, `r${i}`);
      await mkdir(snapshotDir, { recursive: true });
      system.slots.push({
        name: `r${i}`,
        proxy,
        snapshotDir,
        sync: undefined,
        busy: false,
        unwatch: undefined,
      });
    }
    return system;
  }

  /**
   * Opens `slot`'s replica from its snapshot directory and watches it under the slot's name.
   * `waitFor: "restored"` lets it open while the server is down (it catches up later).
   */
  async open(slot: Slot, waitFor: "synced" | "restored"): Promise<LedgerSync> {
    const sync = (await openSynchronizer({
      model: ledger,
      servers: slot.proxy.url,
      stream: this.options.stream,
      clientId: slot.name,
      snapshotDir: slot.snapshotDir,
      compaction:
        this.options.autoCompaction === false
          ? false
          : { everyEntries: this.options.autoCompaction, jitter: 0.5 },
      snapshotEvery: 10,
      requestTimeoutMs: this.options.requestTimeoutMs,
      waitFor,
      connectOptions: { reconnectTimeWait: 100, maxReconnectAttempts: -1, pingInterval: 1_000 },
    })) as LedgerSync;
    slot.sync = sync;
    slot.unwatch = this.history.watch(slot.name, sync);
    return sync;
  }

  /** Closes `slot`'s replica (its `close()` saves the snapshot the next open restores). */
  async close(slot: Slot): Promise<void> {
    const sync = slot.sync;
    if (!sync) return;
    slot.sync = undefined;
    try {
      await sync.close();
    } finally {
      slot.unwatch?.();
      slot.unwatch = undefined;
    }
  }

  /** Opens a replica with no snapshot at all (a late joiner reading the whole log). */
  async openFresh(name: string): Promise<LedgerSync> {
    return (await openSynchronizer({
      model: ledger,
      servers: this.server.url,
      stream: this.options.stream,
      clientId: name,
      snapshots: false,
      compaction: false,
      requestTimeoutMs: this.options.requestTimeoutMs,
    })) as LedgerSync;
  }

  /** Ends every fault: proxies forward and accept again (a pause ends on its own timer). */
  heal(): void {
    for (const s of this.slots) s.proxy.setRefusing(false);
  }

  /** Closes every replica and proxy (errors ignored). */
  async stop(): Promise<void> {
    await Promise.all(this.slots.map((s) => this.close(s).catch(() => undefined)));
    await Promise.all(this.slots.map((s) => s.proxy.stop().catch(() => undefined)));
  }
}
