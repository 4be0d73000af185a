import { deepFreeze } from "./freeze.js";
import { applyEntry } from "./apply.js";
import { ChunkCollector } from "./chunk-collector.js";
import { Origins } from "./pending/origins.js";
import { assembledState, PassedChunked, type PartAssembly } from "./chunked.js";
import { decodeEntry, type ChunkedSnapshotEntry, type DecodeResult, type Entry } from "./entry.js";
import { skippedSequence, StateSyncError } from "./errors.js";
import { findNonJson } from "./json.js";
import type { LogEntry } from "./log.js";
import type { CommandMap } from "./model.js";
import { commandForLog, logModelOf } from "./versions.js";

import { withRevision, type StepResult } from "./replay-state.js";
import type { ReplayedStep } from "./replay-types.js";
import { RunReplay } from "./replay-runs.js";
import { carriedStateRefusal, safeParse } from "./schema-parse.js";
import { usableRecent } from "./recent-ids.js";

export { withRevision, type StepResult } from "./replay-state.js";

const PENDING: StepResult = { kind: "pending" };

/**
 * The deterministic core of a replica: a state, the revision it is at, and the rules that move
 * it along the log (Pravega's `Revisioned` state plus its update loop). Pure: two replays fed
 * the same entries end in the same place. The synchronizer wraps one; `stateAt` runs another.
 *
 * Continuity: in a contiguous log the entry after r must be r + 1; in a shared stream a
 * conditional entry must be based on r. A gap is accepted only onto a snapshot entry (compaction);
 * otherwise the replay stalls with `TRUNCATED`. The first entry consumed must be the genesis
 * entry or a snapshot entry.
 *
 * Versions (docs/versions.md): the log is at the model version of its last genesis, snapshot or
 * switch entry. While that is an older version of the model's chain (`legacy`), entries are
 * replayed with that version's model and `state` is the log's state migrated up (a view); an
 * entry of a version newer than the model stops the replay with `MODEL_UPGRADED`. Every rule
 * depends only on the log, so replicas of different versions that read an entry agree on it or
 * one of them stops. (One exception: the migrated view is checked at the end of each run of
 * entries applied together, see `RunReplay.applyRun`, so a state that fails to migrate only in
 * passing stops the replays that checked it; a history replay, `stateAt`, checks only the state
 * it answers: `checkMigrations`.)
 *
 * Chunked snapshots (docs/format.md): a replay that read every entry since a chunked snapshot's
 * `base` passes over its parts and its snapshot entry (its state already is the one they name).
 * One that has no state to apply entries to (not anchored, or a gap onto a part; in the shared
 * layout a part 0 based on another revision) collects (`ChunkCollector`): its revision stays
 * while it assembles parts and holds the entries after them, until a chunked snapshot entry
 * whose parts all check out; then it loads that state at `base`, replays what it held and stands
 * on the snapshot entry. `readPosition` is how far it has read meanwhile.
 */ export class Replay<S, C extends CommandMap<S>> extends RunReplay<S, C> {
  /** Entries held while waiting for a chunked snapshot (undefined: applying as usual). */
  private collector: ChunkCollector | undefined;
  /**
   * Each part 0 consumed while applying (the last few), by snapshot id: its revision, and the
   * state it is based on when that is the state this replay stood on (to check the snapshot).
   */
  private partStarts = new Map<string, { revision: number; state: unknown }>();
  /** The last chunked snapshot entry passed over, until a compaction checks it. */
  private readonly passed = new PassedChunked();
  /**
   * Set by a replica: without a state, an entry it cannot start from is read past (`scan`),
   * and a starting point after it (genesis, snapshot, switch, a chunked snapshot's parts) is
   * taken; {@link unusableStart} says when none came. Unset (history replays), such an entry
   * stops the replay with `TRUNCATED` at once.
   */
  scanForStart = false;
  /**
   * With {@link scanForStart}, set while a range read runs (`Reader.readRange`): a replica with a
   * state reads past a gap onto entries it cannot apply in the same way (a local snapshot older
   * than such a cut: a review). A live follower's gap still stops it at once.
   */
  scanGaps = false;
  /** The entries read past without a state to apply them to: from the first to the last. */
  private scan: { from: number; through: number } | undefined;
  /** The collector whose held entries `loadChunked` is replaying, with its other assemblies. */
  private reloading: ChunkCollector | undefined;

  protected override get collecting(): boolean {
    return this.collector !== undefined;
  }

  /** The last revision read: `revision`, or past it while entries are held (`pending`). */
  get readPosition(): number {
    return Math.max(this.revision, this.collector?.through ?? 0, this.scan?.through ?? 0);
  }

  /**
   * `TRUNCATED` when this replay has no state and read past entries it could not start from
   * ({@link scanForStart}) with no starting point after them so far; undefined otherwise.
   */
  get unusableStart(): StateSyncError | undefined {
    if (!this.scanning) return undefined;
    const { from, through } = this.scan!;
    // Without a state: what the log lacks before the entries read, up to the last one read.
    return withRevision(this.anchored ? this.truncated(from) : this.reads.noStart(through), from);
  }

  /**
   * No state, and every entry of a log of one state read from revision 1 on, without a gap: the
   * log never had a starting point (commands of writers of a stream deleted and created again, a
   * trial: every opening failed `TRUNCATED` for good). The opener starts it again (`reanchor`).
   */
  get neverStarted(): boolean {
    return this.reads.fromTheStart && this.scanning && this.scan!.from === this.revision + 1;
  }

  /** Reading past entries, no starting point after them yet (a start moves the revision past). */
  private get scanning(): boolean {
    return this.scan !== undefined && !this.collector && this.revision < this.scan.through;
  }

  /** Consumes one entry read from the log; `predecoded`: `decodeEntry` of its data, if known. */
  step(logEntry: LogEntry, predecoded?: DecodeResult): StepResult {
    if (logEntry.revision <= this.readPosition) return { kind: "ignored" };
    this.reads.note(logEntry.revision, this.anchored);
    const gap = this.contiguous && this.anchored && logEntry.revision !== this.revision + 1;
    if (logEntry.skipped && !this.collector) {
      // Used up without an entry (LogEntry.skipped): stepped over, never across a gap before it.
      if (gap) return this.stall(this.truncated(logEntry.revision), logEntry);
      return this.skip(logEntry, skippedSequence(logEntry.revision));
    }
    const decoded = predecoded ?? decodeEntry(logEntry.data);
    if (this.collector) return this.collect(logEntry, decoded);
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT" || gap) {
        return this.stall(gap ? this.truncated(logEntry.revision) : decoded.error, logEntry);
      }
      return this.skip(logEntry, decoded.error);
    }
    const entry = decoded.entry;
    if (entry.kind === "part") {
      const part = entry;
      // A part after a gap, or part 0 of a state past this replica's (the shared layout, where
      // revisions do not show gaps: the entries up to its base were truncated away): the parts
      // may be its way back. A part 0 based at or before the state here cannot be (the replica
      // read on from there): consumed as a no-op, like one appended by hand (a hostile part 0
      // based on an older revision held a live replica's revision for good: fresh-eyes trial).
      const missed =
        !this.contiguous &&
        part.index === 0 &&
        part.base > this.revision &&
        part.base < logEntry.revision;
      if (gap || !this.anchored || missed) {
        return this.startCollecting(logEntry, decoded);
      }
      if (part.index === 0) {
        const state = part.base === this.revision ? this.logState : undefined;
        this.rememberStart(part.id, logEntry.revision, state);
      }
      this.advance(logEntry, "part", part.ts);
      return { kind: "applied", entry: part };
    }
    if (entry.kind === "snapshot" && "parts" in entry) {
      if (gap || !this.anchored) return this.startCollecting(logEntry, decoded);
      // Read without a gap since its parts: the state here is already the one it names, if it is
      // honest; a compaction truncates before it only once `verifiedStart` checked that.
      const start = this.partStarts.get(entry.parts.id);
      this.lastStart = start?.revision;
      this.passed.pass(entry.parts, start?.revision, start?.state);
      this.advance(logEntry, "snapshot", entry.ts);
      return { kind: "applied", entry };
    }
    if (entry.kind === "snapshot" || entry.kind === "switch") return this.jump(logEntry, entry);
    if (gap || !this.anchored) {
      if (entry.kind === "genesis" && !this.anchored) return this.genesis(logEntry, entry);
      return this.readPast(logEntry);
    }
    if (entry.kind === "genesis") {
      // In a shared stream a genesis entry after the state here is the key starting again: an
      // operator purged it, and its next opener wrote the genesis (conditional on an empty key,
      // so nothing else can put one there). Every replica starts again from it, as a fresh one
      // does (before, one that had read the key skipped it and diverged: fresh-eyes trial). In a
      // log of one state no opener writes a second one (the condition is an empty stream).
      if (this.contiguous) {
        return this.skip(logEntry, new StateSyncError("CORRUPT_ENTRY", "a second genesis entry"));
      }
      return this.restart(logEntry, entry);
    }
    if (entry.kind === "intent") {
      this.advance(logEntry, "intent", entry.ts);
      return { kind: "applied", entry };
    }
    if (entry.kind === "update" && entry.base !== this.revision) {
      // Shared stream: a later base is missed entries; an earlier one, no honest append's (a
      // trial: one raw entry stopped a key for good), is skipped as in an own stream.
      const missed = !this.contiguous && entry.base > this.revision;
      if (missed) return this.stall(this.missedBefore(logEntry.revision, entry.base), logEntry);
      return this.skip(
        logEntry,
        new StateSyncError(
          "CORRUPT_ENTRY",
          `conditional entry based on ${entry.base}, not ${this.revision}`,
        ),
      );
    }
    if (entry.kind === "commands") return this.stepCommands(logEntry, entry);
    if (this.origins.isDuplicate(entry.origin)) {
      // A queued update re-sent after its first append landed: consumed without effect.
      this.advance(logEntry, entry.kind, entry.ts);
      return { kind: "applied", entry, duplicate: true };
    }
    let applied: Entry = entry;
    if (entry.kind === "command") {
      const call = commandForLog(this.logModel, this.switchedFrom, entry);
      if (call instanceof StateSyncError) return this.skip(logEntry, call);
      applied = call;
    }
    const outcome = applyEntry(this.logModel, this.logState, applied, this.revision, this.validity);
    if (outcome.kind === "stall") return this.stall(outcome.error, logEntry);
    if (outcome.kind === "applied") {
      const error = this.migrationError(outcome.state, this.logModel, logEntry.revision);
      if (error) return this.stall(error, logEntry);
      this.logState = outcome.state;
    }
    this.origins.note(entry.origin, logEntry.revision);
    this.advance(logEntry, entry.kind, entry.ts);
    return outcome.kind === "noop"
      ? { kind: "applied", entry, error: withRevision(outcome.error, logEntry.revision) }
      : { kind: "applied", entry };
  }

  /**
   * `lastStart` when a compaction may truncate the log before it: at once after a genesis, a
   * one-message snapshot or switch entry, or a chunked snapshot loaded from its parts; after a
   * chunked snapshot this replay passed over (taking its own state as the one the parts hold),
   * only once the state at its base is checked to be that state (the SHA-256 and byte count of
   * its JSON text, computed here once). Otherwise undefined: a forged chunked snapshot (valid
   * parts of another state) is never made the log's starting point, where replicas that load
   * it would hold another state than those that passed over it (fresh-eyes trial).
   */
  verifiedStart(): number | undefined {
    return this.passed.verified(this.lastStart);
  }

  private rememberStart(id: string, revision: number, state: unknown): void {
    this.partStarts.set(id, { revision, state });
    if (this.partStarts.size > 8) this.partStarts.delete(this.partStarts.keys().next().value!);
  }

  /**
   * An entry this replay cannot apply for want of a state (a gap in a contiguous log, or none
   * yet): `TRUNCATED`, unless {@link scanForStart} (and for a gap {@link scanGaps}) lets it look
   * further.
   * A log whose retained history starts inside what a compaction truncated (a purge a server
   * killed right after undid in part: a trial on 2.10.27, 5 of 5 runs) may hold a usable
   * snapshot entry, or a chunked snapshot's parts, after a few such entries: before, a fresh
   * replica stopped at the first of them, and every new replica failed to open until the next
   * compaction. Entries before a starting point are in its state (its base is past them).
   */
  private readPast(logEntry: LogEntry): StepResult {
    if (!this.scanForStart || (this.anchored && !this.scanGaps)) {
      return this.stall(this.truncated(logEntry.revision), logEntry);
    }
    const from = this.scanning ? this.scan!.from : logEntry.revision;
    this.scan = { from, through: logEntry.revision };
    return PENDING;
  }

  private startCollecting(logEntry: LogEntry, decoded: DecodeResult): StepResult {
    this.collector = new ChunkCollector(logEntry.revision - 1, this.contiguous);
    // Replaying what a collector held (`loadChunked`): a part 0 held there without its data
    // starts this collection with the assembly that collector built from the data (the shared
    // layout: a part 0 based past the state just loaded, the entries before it truncated).
    const part = decoded.ok && decoded.entry.kind === "part" ? decoded.entry : undefined;
    const built = part?.index === 0 ? this.reloading?.take(part.id) : undefined;
    if (built?.start === logEntry.revision) this.collector.adopt(built);
    return this.collect(logEntry, decoded);
  }

  /**
   * An entry while waiting for a chunked snapshot (see `ChunkCollector`): parts are assembled,
   * other entries held; a genesis (unanchored), a one-message snapshot or a switch entry ends the
   * wait as usual, a chunked snapshot entry whose parts are all here ends it by loading them.
   */
  private collect(logEntry: LogEntry, decoded: DecodeResult): StepResult {
    const c = this.collector!;
    if (this.contiguous && logEntry.revision !== c.through + 1) {
      // A truncation overtook the read (invariant 1 of the collector): start over from here.
      this.collector = undefined;
      return this.step(logEntry, decoded);
    }
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT") return this.stall(decoded.error, logEntry);
      c.add(logEntry, decoded);
      return PENDING;
    }
    const entry = decoded.entry;
    if (entry.kind === "part") {
      c.addPart(logEntry, entry);
      return PENDING;
    }
    if (entry.kind === "snapshot" && "parts" in entry) {
      const assembly = c.take(entry.parts.id);
      // Shared layout: fewer parts than it names is a truncation that removed its last ones (no
      // revision gap shows it there), passed over as below (a review: CORRUPT_ENTRY for a sound log).
      const cut = !this.contiguous && assembly && assembly.count < entry.parts.count;
      if (assembly !== undefined && assembly.base === entry.base && !cut) {
        const loaded = this.loadChunked(logEntry, entry, assembly);
        if (typeof loaded !== "string") return loaded;
        c.add(logEntry, decoded);
        const error = new StateSyncError(
          "CORRUPT_ENTRY",
          `chunked snapshot entry ${entry.parts.id} is invalid: ${loaded}`,
        );
        return { kind: "pending", error: withRevision(error, logEntry.revision) };
      }
      c.add(logEntry, decoded); // its parts were truncated (or never seen): not this one
      return PENDING;
    }
    if (entry.kind === "snapshot" || entry.kind === "switch" || entry.kind === "genesis") {
      if (entry.kind !== "genesis" || !this.anchored) {
        this.collector = undefined;
        return entry.kind === "genesis"
          ? this.genesis(logEntry, entry)
          : this.jump(logEntry, entry);
      }
    }
    if (!c.assembling && !this.anchored) {
      this.collector = undefined; // nothing to wait for: as without parts
      return this.readPast(logEntry);
    }
    c.add(logEntry, decoded);
    if (c.overflow) {
      this.collector = undefined;
      return this.stall(this.truncated(logEntry.revision), logEntry);
    }
    return PENDING;
  }

  /**
   * Loads a chunked snapshot from its assembled parts: the state at `base`, checked like a
   * one-message snapshot's (`jump`), then the entries held since part 0 replayed onto it, then
   * the snapshot entry itself. Why not (nothing changed) when the parts are unusable.
   */
  private loadChunked(
    logEntry: LogEntry,
    entry: ChunkedSnapshotEntry,
    assembly: PartAssembly,
  ): StepResult | string {
    const c = this.collector!;
    // Part 0 follows its base (it was appended conditionally on it), which is not behind this
    // replay: otherwise the parts are not what their snapshot entry says (hostile, or damaged).
    if (
      assembly.base < this.revision ||
      (this.contiguous && assembly.start !== assembly.base + 1)
    ) {
      return `its part 0 (revision ${assembly.start}) does not follow its base ${assembly.base}`;
    }
    const model = logModelOf(this.model, entry);
    if (model instanceof StateSyncError) return this.stall(model, logEntry);
    const parsed = assembledState(assembly, entry.parts);
    let problem = parsed.ok ? undefined : parsed.reason;
    if (parsed.ok) {
      const valid = safeParse(model.state, parsed.value);
      problem = valid.success ? findNonJson(parsed.value) : carriedStateRefusal(valid.error);
    }
    if (problem !== undefined || !parsed.ok) return problem ?? "unusable";
    const state = deepFreeze(parsed.value);
    const error = this.migrationError(state, model, assembly.base);
    if (error) return this.stall(error, logEntry);
    this.collector = undefined;
    this.setLogModel(model, state);
    this.validity.reset(true); // checked above
    this.switchedFrom = entry.from;
    this.anchored = true;
    this.setRecent(usableRecent(entry.recent, assembly.base));
    this.origins = new Origins(entry.origins);
    this.revision = assembly.base;
    this.messageId = undefined;
    const replayed: ReplayedStep[] = [];
    const outer = this.reloading;
    this.reloading = c;
    try {
      for (const p of c.pendingAfter(assembly.start - 1)) {
        const r = this.step(p.entry, p.decoded);
        replayed.push({ revision: p.entry.revision, result: r });
        if (r.kind === "stall") return r;
      }
    } finally {
      this.reloading = outer;
    }
    if (this.collector) return PENDING; // a gap within what was held
    this.lastStart = assembly.start;
    this.passed.clear(); // loaded from its own parts: this state is the snapshot's
    this.advance(logEntry, "snapshot", entry.ts);
    return { kind: "applied", entry, replayed };
  }
}
