import { StateSyncError } from "../errors.js";
import { randomId } from "../prng.js";
import {
  checkPendingRecord,
  checkPendingSeqs,
  DAMAGED_CONTENT_CHARS,
  ownerSchema,
  readPendingRecord,
  type DamagedPendingRecord,
  type PendingLoad,
  type PendingQueue,
  type PendingRecord,
  type PendingStore,
} from "./pending-store.js";

/** What one queue keeps: records as JSON text (so loads return fresh copies), the high seq. */
interface QueueData {
  readonly origin: string;
  readonly records: Map<number, string>;
  highSeq: number;
  /** The open queue holding the lock, if any. */
  holder: MemoryPendingQueue | undefined;
}

/**
 * An in-process {@link PendingStore}: not durable (`durable` is false), so `update` reports its
 * queued updates as held in memory only. The lock is per store instance.
 *
 * Test hooks: `sibling()` returns another store over the same records and locks (another process
 * sharing the storage); `crashed()` returns a store over the same records with every lock released, as a
 * process that restarts after being killed finds its storage; `copy()` returns a store over a
 * copy of the records, the original going on (a copied folder or volume);
 * `corrupt(key, owner, seq)` damages one stored record.
 */
export class MemoryPendingStore implements PendingStore {
  constructor(private readonly queues = new Map<string, QueueData>()) {}

  async open(key: string, owner: string): Promise<PendingQueue> {
    if (typeof key !== "string" || key.length === 0) {
      throw new StateSyncError("VALIDATION", "a pending queue key is a non-empty string");
    }
    if (!ownerSchema.safeParse(owner).success) {
      throw new StateSyncError("VALIDATION", `invalid queue owner ${JSON.stringify(owner)}`);
    }
    const id = `${key}\u0000${owner}`;
    let data = this.queues.get(id);
    if (data === undefined) {
      data = { origin: randomId(12), records: new Map(), highSeq: 0, holder: undefined };
      this.queues.set(id, data);
    }
    if (data.holder !== undefined) {
      throw new StateSyncError("QUEUE_LOCKED", `the queue of ${key} for ${owner} is open`, {
        details: { key, owner },
      });
    }
    const queue = new MemoryPendingQueue(data);
    data.holder = queue;
    return queue;
  }

  /** See `PendingStore.owners`: the owners of `key` opened in this storage. */
  async owners(key: string): Promise<string[]> {
    if (typeof key !== "string" || key.length === 0) {
      throw new StateSyncError("VALIDATION", "a pending queue key is a non-empty string");
    }
    const prefix = `${key}\u0000`;
    return [...this.queues.keys()]
      .filter((id) => id.startsWith(prefix))
      .map((id) => id.slice(prefix.length))
      .filter((owner) => !owner.includes("\u0000")); // a longer key's (owners hold no NUL)
  }

  /** Test hook: another store over the same records and locks. */
  sibling(): MemoryPendingStore {
    return new MemoryPendingStore(this.queues);
  }

  /** Test hook: the same records, every lock released (a restart after a crash). */
  crashed(): MemoryPendingStore {
    const copy = new Map<string, QueueData>();
    for (const [id, data] of this.queues) {
      data.holder?.fence();
      copy.set(id, { ...data, holder: undefined });
    }
    return new MemoryPendingStore(copy);
  }

  /** Test hook: a store over a copy of the records, unlocked; this one goes on (`cp -r`). */
  copy(): MemoryPendingStore {
    const copy = new Map<string, QueueData>();
    for (const [id, data] of this.queues) {
      copy.set(id, { ...data, records: new Map(data.records), holder: undefined });
    }
    return new MemoryPendingStore(copy);
  }

  /** Test hook: truncates the stored text of one record. */
  corrupt(key: string, owner: string, seq: number): void {
    const records = this.queues.get(`${key}\u0000${owner}`)?.records;
    const text = records?.get(seq);
    if (text !== undefined) records!.set(seq, text.slice(0, Math.floor(text.length / 2)));
  }
}

class MemoryPendingQueue implements PendingQueue {
  readonly durable = false;
  private closed = false;
  constructor(private readonly data: QueueData) {}

  get origin(): string {
    return this.data.origin;
  }

  /** After `crashed()`: this holder is gone, as its process would be. */
  fence(): void {
    this.closed = true;
  }

  private check(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the pending queue was closed");
  }

  /** Damaged records are deleted and handed back with their text (`content`). */
  async load(): Promise<PendingLoad> {
    this.check();
    const records: PendingRecord[] = [];
    const damaged: DamagedPendingRecord[] = [];
    for (const [seq, text] of [...this.data.records].sort((a, b) => a[0] - b[0])) {
      let read: ReturnType<typeof readPendingRecord>;
      try {
        read = readPendingRecord(JSON.parse(text), seq);
      } catch {
        read = { reason: "not JSON" };
      }
      if ("record" in read) {
        records.push(read.record);
        continue;
      }
      this.data.records.delete(seq);
      damaged.push({ seq, reason: read.reason, content: text.slice(0, DAMAGED_CONTENT_CHARS) });
    }
    const nextSeq = this.data.highSeq + 1;
    return damaged.length > 0 ? { records, nextSeq, damaged } : { records, nextSeq };
  }

  async put(record: PendingRecord): Promise<void> {
    this.check();
    const checked = checkPendingRecord(record);
    this.data.records.set(checked.seq, JSON.stringify(checked));
    this.data.highSeq = Math.max(this.data.highSeq, checked.seq);
  }

  async delete(seqs: readonly number[]): Promise<void> {
    this.check();
    for (const seq of checkPendingSeqs(seqs)) this.data.records.delete(seq);
  }

  async clear(): Promise<void> {
    this.check();
    this.data.records.clear();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.data.holder === this) this.data.holder = undefined;
  }
}
