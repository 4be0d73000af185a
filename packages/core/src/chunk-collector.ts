import { PartAssembly } from "./chunked.js";
import type { ChunkedSnapshotEntry, DecodeResult, PartEntry } from "./entry.js";
import type { LogEntry } from "./log.js";

/** Entries a collector holds while it waits for a usable chunked snapshot entry. */
export const MAX_PENDING_ENTRIES = 100_000;
/** Bytes of entries other than parts a collector holds at most. */
export const MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** Chunked snapshots assembled at once (more: the oldest is dropped). */
const MAX_ASSEMBLIES = 4;

const EMPTY = new Uint8Array(0);

/** An entry held for replay once the state is loaded, with its decoding. */
export interface PendingEntry {
  readonly entry: LogEntry;
  readonly decoded: DecodeResult;
}

/**
 * What a replica holds while it has no state to apply entries to: it is not anchored yet (a
 * fresh replica on a log that starts with part entries), or a truncation went past its revision
 * and the entries after the gap are parts. It assembles the parts of each chunked snapshot whose
 * part 0 it saw, and holds every entry after them (parts and snapshot entries reduced to their
 * envelope, without data), so that once a chunked snapshot entry arrives whose parts are all
 * here, the replica loads its state at `base` and replays what followed (see `Replay`).
 *
 * Invariants:
 * 1. Entries arrive in log order with no gap (`through`): the caller drops the collector on a
 *    gap, since a truncation then removed entries it holds or needs.
 * 2. Memory is bounded: the parts' text by `MAX_CHUNKED_BYTES` per assembly and
 *    {@link MAX_ASSEMBLIES} assemblies, the other entries by {@link MAX_PENDING_ENTRIES} and
 *    {@link MAX_PENDING_BYTES} (`overflow`).
 */
export class ChunkCollector {
  private readonly assemblies = new Map<string, PartAssembly>();
  /** Assemblies built by an earlier collector from the parts' data (see {@link adopt}). */
  private readonly adopted = new Set<string>();
  private readonly pending: PendingEntry[] = [];
  private pendingBytes = 0;

  constructor(
    /** Revision of the last entry collected (or the one before the first). */
    public through: number,
    /** Whether the log is contiguous (own stream): the shared layout shows no revision gaps. */
    private readonly contiguous = true,
  ) {}

  /**
   * Takes over `assembly`, built by the collector whose held entries are being replayed (its
   * parts held here as envelopes without data): the parts it has are not added again, later
   * ones are. Before, the envelopes were assembled again, into a state of 0 bytes (a trial).
   */
  adopt(assembly: PartAssembly): void {
    this.assemblies.set(assembly.id, assembly);
    this.adopted.add(assembly.id);
  }

  /** Whether the held entries exceed the bounds (invariant 2). */
  get overflow(): boolean {
    return this.pending.length > MAX_PENDING_ENTRIES || this.pendingBytes > MAX_PENDING_BYTES;
  }

  /** Whether some assembly has started (entries after it are worth holding). */
  get assembling(): boolean {
    return this.assemblies.size > 0;
  }

  /** A part: index 0 starts an assembly; later ones join theirs (or are dropped). */
  addPart(logEntry: LogEntry, part: PartEntry): void {
    this.through = logEntry.revision;
    const known = this.assemblies.get(part.id);
    if (known && this.adopted.has(part.id) && part.index < known.count) {
      return this.hold(logEntry, { ...part, data: "" }); // in the adopted assembly already
    }
    if (known && !this.contiguous && known.broken === undefined && part.index > known.count) {
      // The shared layout's gap: a truncation removed parts this read had not reached. Not
      // corruption: its snapshot entry is passed over as one whose parts were truncated
      // (before, a CORRUPT_ENTRY event said "part 29 came where part 26 was expected").
      this.assemblies.delete(part.id);
      this.adopted.delete(part.id);
    }
    if (part.index === 0) {
      this.assemblies.delete(part.id);
      if (this.assemblies.size >= MAX_ASSEMBLIES) {
        const oldest = this.assemblies.keys().next().value!;
        this.assemblies.get(oldest)!.break("dropped");
        this.assemblies.delete(oldest);
      }
      this.assemblies.set(part.id, new PartAssembly(part.id, part.base, logEntry.revision));
    }
    this.assemblies.get(part.id)?.add(part);
    if (this.assemblies.size > 0) this.hold(logEntry, { ...part, data: "" });
  }

  /** Any other entry: held when an assembly has started (entries before one are useless). */
  add(logEntry: LogEntry, decoded: DecodeResult): void {
    this.through = logEntry.revision;
    if (this.assemblies.size === 0) return;
    if (decoded.ok && decoded.entry.kind === "snapshot" && "parts" in decoded.entry) {
      return this.hold(logEntry, decoded.entry);
    }
    this.pending.push({ entry: logEntry, decoded });
    this.pendingBytes += logEntry.data.byteLength;
  }

  /** Holds an envelope without data. */
  private hold(logEntry: LogEntry, entry: PartEntry | ChunkedSnapshotEntry): void {
    this.pending.push({
      entry: { revision: logEntry.revision, messageId: logEntry.messageId, data: EMPTY },
      decoded: { ok: true, entry },
    });
  }

  /** The assembly a chunked snapshot entry names, removed from the collector. */
  take(id: string): PartAssembly | undefined {
    const a = this.assemblies.get(id);
    this.assemblies.delete(id);
    this.adopted.delete(id);
    return a;
  }

  /** The held entries after revision `after`, in log order. */
  pendingAfter(after: number): PendingEntry[] {
    return this.pending.filter((p) => p.entry.revision > after);
  }
}
