import type { ChunkedSnapshotEntry, OriginRow, PartEntry, RecentEntry } from "../entry.js";
import type { LogEntry } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import type { Appender, Prepared } from "./appender.js";
import type { CompactionDeps } from "./compaction-run.js";
import type { Replica } from "./replica.js";

/** Bytes kept free in each part besides its measured envelope (a longer index, a later `ts`). */
const ENVELOPE_MARGIN = 32;

/**
 * The fewest bytes of data a part must be able to hold: below it a chunked snapshot is refused
 * (`PAYLOAD_TOO_LARGE`) rather than written in thousands of tiny parts (a fresh-eyes trial: a
 * 15 KB state became 15,600 parts of one character when the log's limit was below the room the
 * writer assumed for an envelope).
 */
const MIN_PART_DATA_BYTES = 256;

/**
 * The slice of `text` from `start` of at most `chars` UTF-16 units (at least one), never ending
 * between the two halves of a surrogate pair: each part's data is then well-formed text whose
 * UTF-8 bytes, concatenated, are those of the whole text (what `sha256` and `bytes` cover).
 */
export function sliceText(text: string, start: number, chars: number): string {
  let end = Math.min(text.length, start + Math.max(1, Math.floor(chars)));
  const last = text.charCodeAt(end - 1);
  if (end < text.length && end - start > 1 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(start, end);
}

/** What one chunked snapshot captured at its base. */
export interface ChunkedCapture {
  readonly base: number;
  readonly model: Model<any, any>;
  readonly state: unknown;
  readonly recent: RecentEntry[];
  readonly switchedFrom: number | undefined;
  /** The table of applied origins at `base` (offline queues), when not empty. */
  readonly origins?: OriginRow[] | undefined;
}

/** Part 0 as stored: the snapshot's id and the revision it starts at. */
export interface ChunkedStart {
  readonly id: string;
  readonly revision: number;
}

/** A chunked snapshot written: its entry's revision, and where it starts (part 0). */
export interface ChunkedWritten {
  readonly revision: number;
  readonly start: number;
}

/**
 * Writes a chunked snapshot (docs/format.md, "Chunked snapshots"), in two steps so that the
 * compactor can let its writer go between them:
 * 1. `open`: part 0, empty, appended conditionally on `base` (small and sent at once, so it
 *    wins its race with other writers as often as a small update does). A conflict is a value.
 * 2. `finish`: the state's JSON text in parts 1..n, each as large as the log accepts, and the
 *    snapshot entry naming them, all appended unconditionally (entries of other writers may
 *    land between them: a reader that loads the snapshot replays those onto the state at
 *    `base`). Each appended part the replica can consume at once is consumed, so its bytes are
 *    not held.
 * A writer that dies midway leaves parts no snapshot entry names: readers never use them, and
 * the next compaction (based on a later revision) truncates them away.
 *
 * Loaded on demand with the rest of a compaction (compaction-run.ts): imports types only.
 */
export class ChunkedWriter<S, C extends CommandMap<S>> {
  constructor(
    private readonly contiguous: boolean,
    private readonly clientId: string,
    private readonly replica: Replica<S, C>,
    private readonly appender: Appender,
    private readonly deps: CompactionDeps,
  ) {}

  /** Appends part 0 conditionally on `capture.base`: its entry, or undefined on a conflict. */
  async open(
    capture: ChunkedCapture,
    id = this.deps.randomId(16),
  ): Promise<ChunkedStart | undefined> {
    this.room(await this.appender.limit(), this.envelopeBytes(capture.base, id)); // or nothing sent
    const prepared = await this.fitting(
      (recent) => ({ ...this.part(capture.base, id, 0, ""), recent }),
      capture.recent,
      "part 0 of the snapshot",
    );
    const outcome = await this.appender.appendConditional(prepared, capture.base, {
      timeoutMs: this.deps.outcomeTimeoutMs,
    });
    if (outcome.kind === "conflict") return undefined;
    if (this.replica.revision === capture.base) this.replica.consume([outcome.entry]);
    return { id, revision: outcome.entry.revision };
  }

  /** Appends the parts of `text` (the state's JSON) and the snapshot entry after part 0. */
  async finish(
    capture: ChunkedCapture,
    start: ChunkedStart,
    text: string,
  ): Promise<ChunkedWritten> {
    const id = start.id;
    const digest = new this.deps.TextDigest();
    const envelope = this.envelopeBytes(capture.base, id);
    let index = 1;
    let chars = 64 * 1024; // grows to what the log accepts after the first part
    for (let pos = 0; pos < text.length; index++) {
      const part = await this.preparePart(capture.base, id, index, text, pos, chars, envelope);
      const { prepared, slice } = part;
      digest.update(slice);
      const stored = await this.appender.appendUnconditional(prepared, {
        timeoutMs: this.deps.outcomeTimeoutMs,
      });
      this.consume(stored);
      pos += slice.length;
      // As many characters as fill the room, at the bytes per character this slice took.
      const room = this.room(prepared.limit, envelope);
      chars = fit(slice.length, room, prepared.data.byteLength - envelope);
    }
    const entry = (recent: RecentEntry[]): ChunkedSnapshotEntry => ({
      v: 2,
      kind: "snapshot",
      base: capture.base,
      ts: Date.now(),
      client: this.clientId,
      model: capture.model.name,
      version: capture.model.version,
      initialHash: capture.model.initialHash,
      parts: { id, count: index, bytes: digest.bytes, sha256: digest.hex() },
      recent,
      ...(capture.switchedFrom !== undefined ? { from: capture.switchedFrom } : {}),
      ...(capture.origins !== undefined ? { origins: capture.origins } : {}),
    });
    const prepared = await this.fitting(entry, capture.recent, "the chunked snapshot entry");
    const stored = await this.appender.appendUnconditional(prepared, {
      timeoutMs: this.deps.outcomeTimeoutMs,
    });
    this.consume(stored);
    return { revision: stored.revision, start: start.revision };
  }

  /** The largest part from `pos` on that the log accepts, starting with `chars` characters. */
  private async preparePart(
    base: number,
    id: string,
    index: number,
    text: string,
    pos: number,
    chars: number,
    envelope: number,
  ): Promise<{ prepared: Prepared & { limit: number }; slice: string }> {
    for (;;) {
      const slice = sliceText(text, pos, chars);
      try {
        const prepared = await this.appender.prepare(
          this.part(base, id, index, slice),
          `part ${index} of the snapshot`,
        );
        return { prepared: { ...prepared, limit: await this.appender.limit() }, slice };
      } catch (e) {
        if (!this.deps.isStateSyncError(e, "PAYLOAD_TOO_LARGE") || slice.length <= 1) throw e;
        const { bytes, maxEntryBytes } = e.details as { bytes: number; maxEntryBytes: number };
        chars = fit(slice.length, this.room(maxEntryBytes, envelope), bytes - envelope);
        if (chars >= slice.length) chars = slice.length - 1;
      }
    }
  }

  /** Bytes of a part entry with empty data: what every part takes besides its data. */
  private envelopeBytes(base: number, id: string): number {
    const empty = JSON.stringify(this.part(base, id, Number.MAX_SAFE_INTEGER, ""));
    return new TextEncoder().encode(empty).byteLength + ENVELOPE_MARGIN;
  }

  /** Bytes of data a part may hold under `limit`; throws when too few to chunk sensibly. */
  private room(limit: number, envelope: number): number {
    const room = limit - envelope;
    if (room >= MIN_PART_DATA_BYTES) return room;
    throw new this.deps.StateSyncError(
      "PAYLOAD_TOO_LARGE",
      `a chunked snapshot's parts would hold ${Math.max(0, room)} bytes of the state each under the log's entry limit of ${limit} bytes (at least ${MIN_PART_DATA_BYTES} are needed): raise the limit (the stream's max_msg_size, the server's max_payload)`,
      { details: { maxEntryBytes: limit, partRoom: Math.max(0, room) } },
    );
  }

  /**
   * `build(recent)` prepared, with the oldest half of `recent` dropped while it is too large (a
   * log with a small entry limit): a lookup that needs an id no longer listed then answers that
   * the outcome is unknown, never a wrong one (engine/own-lookup.ts).
   */
  private async fitting(
    build: (recent: RecentEntry[]) => PartEntry | ChunkedSnapshotEntry,
    recent: RecentEntry[],
    what: string,
  ): Promise<Prepared> {
    for (let kept = recent; ; kept = kept.slice(Math.ceil(kept.length / 2))) {
      try {
        return await this.appender.prepare(build(kept), what);
      } catch (e) {
        if (!this.deps.isStateSyncError(e, "PAYLOAD_TOO_LARGE") || kept.length === 0) throw e;
      }
    }
  }

  private part(base: number, id: string, index: number, data: string): PartEntry {
    return { v: 1, kind: "part", ts: Date.now(), client: this.clientId, id, index, base, data };
  }

  /**
   * Consumes an entry this writer stored when it is surely the next one (a contiguous log, the
   * replica right before it), so that its bytes are not held; otherwise the reader brings it.
   */
  private consume(stored: LogEntry): void {
    if (this.contiguous && this.replica.readPosition === stored.revision - 1) {
      this.replica.consume([stored]);
    }
  }
}

/** Characters of a slice that fill `room` bytes, when `chars` of them took `bytes` (at least 1). */
function fit(chars: number, room: number, bytes: number): number {
  return Math.max(1, Math.floor((chars * room) / Math.max(1, bytes)));
}
