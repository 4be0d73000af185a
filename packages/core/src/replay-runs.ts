import { applyBatch, batchItem, type BatchItem } from "./apply.js";
import { applyCommands, atCommand } from "./apply-commands.js";
import type { CommandsEntry } from "./entry-types.js";
import { decodeEntry, type DecodeResult } from "./entry.js";
import type { LogEntry } from "./log.js";
import type { CommandMap } from "./model.js";
import { ReplayState, type StepResult } from "./replay-state.js";
import { writerVersion } from "./versions.js";

/**
 * The batched path of a {@link Replay} (`replay.ts`): runs of plain entries applied in one Immer
 * draft, with the same results as `step` on each. `Replay` has the rules of one entry.
 */
export abstract class RunReplay<S, C extends CommandMap<S>> extends ReplayState<S, C> {
  /** Consumes one entry read from the log (see `Replay.step`). */
  abstract step(logEntry: LogEntry, predecoded?: DecodeResult): StepResult;

  /**
   * Consumes entries in order, like {@link step} on each (same results), but applies each run of
   * consecutive plain entries (updates and known commands that continue the revision chain) in one
   * Immer draft: a long catch-up no longer copies the containers it touches once per entry. Stops
   * after a stall. `decoded[i]`, when given, is `decodeEntry` of `entries[i].data` (the array is
   * filled in as entries get decoded). `produced[i]`, when given, is the state this writer's
   * recipes produced for its own update `entries[i]` from the state at `base`: it is adopted
   * instead of replaying the patches when the replay stands at `base` (see {@link adopt}).
   */
  stepMany(
    entries: readonly LogEntry[],
    decoded: Array<DecodeResult | undefined> = [],
    produced: ReadonlyArray<{ readonly base: number; readonly state: unknown } | undefined> = [],
  ) {
    const results: StepResult[] = [];
    let i = 0;
    while (i < entries.length) {
      const own = produced[i];
      const d = decoded[i];
      if (own && d?.ok && d.entry.kind === "update") {
        // This writer's own update: adopt what its recipes produced (see `adopt`), or step it.
        const e = d.entry;
        if (!this.adopt(entries[i]!, own.base, e.ts, own.state as S, e.origin, e.patches)) {
          const result = this.step(entries[i]!, d);
          results.push(result);
          if (result.kind === "stall") return results;
        } else results.push({ kind: "applied", entry: d.entry });
        i += 1;
        continue;
      }
      const run = this.plainRun(entries, decoded, i, produced);
      let alone = 1; // how many entries from `i` on to step one by one (after a batch)
      if (run.length > 0) {
        let outcome = this.applyRun(run);
        // The entries that ran are decoded again before they run again: a command that changed
        // its arguments (`ids.reverse()`) would run on what it left of them.
        if (outcome.kind !== "applied") {
          forget(decoded, i, outcome.kind === "failed" ? outcome.at + 1 : run.length);
        }
        if (outcome.kind === "failed" && outcome.at > 0) {
          // The entries before the one that failed, as a batch again; then that one alone.
          const head = this.plainRun(entries, decoded, i, produced, outcome.at);
          outcome = this.applyRun(head);
          if (outcome.kind === "applied") {
            i = this.adoptBatch(entries, i, head, outcome, results);
          } else {
            forget(decoded, i, head.length);
            alone = head.length + 1;
          }
        } else if (outcome.kind === "applied") {
          i = this.adoptBatch(entries, i, run, outcome, results);
          continue;
        } else if (outcome.kind === "unusable") alone = run.length;
      }
      // One by one: an entry that is not plain, or one that failed in a batch.
      const end = i + alone;
      for (; i < end; i++) {
        const result = this.step(entries[i]!, decoded[i]);
        results.push(result);
        if (result.kind === "stall") return results;
      }
    }
    return results;
  }

  /**
   * `applyBatch` of `run`. On an older log version the run's end state must migrate too, else it
   * is `unusable` and `step` checks each entry (once per entry, a replica with a large state fell
   * behind busy older writers and could not switch: a trial, stop 33).
   */
  private applyRun(run: readonly BatchItem[]): ReturnType<typeof applyBatch> {
    const v = this.legacy ? this.validity.fork() : this.validity;
    const outcome = applyBatch(this.logModel, this.logState, run, this.revision, v);
    if (!this.legacy || outcome.kind !== "applied") return outcome;
    const last = run.at(-1)!.revision;
    if (this.migrationError(outcome.state, this.logModel, last)) return { kind: "unusable" };
    this.validity.assign(v);
    return outcome;
  }

  /**
   * The plain entries from `entries[start]` on, as they would chain from the current revision
   * (at most `limit`).
   */
  private plainRun(
    entries: readonly LogEntry[],
    decoded: Array<DecodeResult | undefined>,
    start: number,
    produced: readonly unknown[],
    limit = Infinity,
  ): BatchItem[] {
    const run: BatchItem[] = [];
    if (!this.anchored || this.collecting) return run;
    let revision = this.revision;
    const origins = new Map<string, number>(); // the highest seq of each origin in the run
    for (let i = start; i < entries.length && run.length < limit; i++) {
      const logEntry = entries[i]!;
      if (logEntry.revision <= revision || (i > start && produced[i] !== undefined)) break;
      if (this.contiguous && logEntry.revision !== revision + 1) break;
      const d = (decoded[i] ??= decodeEntry(logEntry.data));
      if (!d.ok || (d.entry.kind === "update" && d.entry.base !== revision)) break;
      if (
        d.entry.kind === "command" &&
        writerVersion(d.entry, this.logModel, this.switchedFrom) !== this.logModel.version
      )
        break;
      const item = batchItem(this.logModel, d.entry, logEntry.revision);
      if (item === undefined) break;
      const origin = item.entry.origin;
      if (origin !== undefined) {
        // A duplicate is consumed alone, by `step`.
        if (origin[1] <= (origins.get(origin[0]) ?? this.origins.get(origin[0])?.seq ?? 0)) break;
        origins.set(origin[0], origin[1]);
      }
      run.push(item);
      revision = logEntry.revision;
    }
    return run;
  }

  /** A `commands` entry (format 4): each command as a checked command entry of its own. */
  protected stepCommands(logEntry: LogEntry, entry: CommandsEntry): StepResult {
    const { logModel, revision } = this;
    const stalled = (s: unknown) => this.migrationError(s, logModel, logEntry.revision);
    const { switchedFrom, logState, validity } = this;
    const out = applyCommands(logModel, switchedFrom, logState, entry, revision, validity, stalled);
    if (out.kind === "stall") return this.stall(out.error, logEntry);
    this.logState = out.state;
    this.advance(logEntry, entry.kind, entry.ts);
    const failures = out.failures.map(([i, e]) =>
      atCommand(e, logEntry.revision, i, entry.commands.length),
    );
    return failures.length > 0 ? { kind: "applied", entry, failures } : { kind: "applied", entry };
  }
}

/** Drops the decoding of `count` entries from `from` on (they are decoded again when needed). */
function forget(decoded: Array<DecodeResult | undefined>, from: number, count: number): void {
  for (let k = from; k < from + count && k < decoded.length; k++) decoded[k] = undefined;
}
