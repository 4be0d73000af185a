import type { CompactionPolicy } from "../compaction-policy.js";
import { ownStateTextProblem, TextDigest } from "../chunked.js";
import { MAX_STATE_DEPTH } from "../entry-limits.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import { findJsonProblem } from "../json.js";
import { nestedDeeperThan } from "../nesting.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import { randomId } from "../prng.js";
import type { CompactionResult, SyncStats } from "../synchronizer-types.js";
import type { Appender } from "./appender.js";
import type { CompactionDeps, CompactionRun } from "./compaction-run.js";
import type { Contention } from "./contention.js";
import { DEFAULT_OUTCOME_TIMEOUT_MS } from "./options.js";
import type { Opener } from "./opener.js";
import type { Reader } from "./reader.js";
import type { AppliedBatch, Replica } from "./replica.js";
import type { StatusHub } from "./status.js";
import type { Writer } from "./writer.js";

/** What a compaction uses of the engine's code (see `CompactionDeps`). */
const deps: CompactionDeps = {
  StateSyncError,
  isStateSyncError,
  findJsonProblem,
  nestedDeeperThan,
  ownStateTextProblem,
  maxStateDepth: MAX_STATE_DEPTH,
  TextDigest,
  randomId,
  outcomeTimeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
};

type RunModule = typeof import("./compaction-run.js");
let runModule: Promise<RunModule> | undefined;

/**
 * compaction-run.ts, loaded once (`UNAVAILABLE` when it cannot be, as a page that lost its
 * network; the next compaction tries again).
 */
function loadRun(): Promise<RunModule> {
  runModule ??= import("./compaction-run.js").catch((err: unknown) => {
    runModule = undefined;
    throw new StateSyncError(
      "UNAVAILABLE",
      `the compaction code could not be loaded (${String(err)})`,
      {
        cause: err,
      },
    );
  });
  return runModule;
}

/**
 * Compaction: writes the state into the log as a snapshot entry (conditionally, at the current
 * revision), then truncates the history before it; and the automatic policy that starts one
 * after so many entries or bytes.
 *
 * Invariants:
 * 1. A crash between the snapshot entry and the truncation loses nothing: the next compaction
 *    truncates. Concurrent compactors are safe: only one snapshot entry can be based on a
 *    revision; truncating below an already truncated point removes nothing (Pravega issues 4383
 *    and 6232).
 * 2. A state replicas would refuse as a snapshot (schema, JSON, nested deeper than
 *    `MAX_STATE_DEPTH`) never replaces the history: it is refused (`VALIDATION`) before anything
 *    is written, part 0 of a chunked snapshot included, and the text of a chunked snapshot is
 *    checked with the readers' own checks before its parts are written and the log truncated.
 * 3. This replica's own updates wait while its snapshot entry is appended, so they never
 *    conflict with it; one compaction runs at a time (a second call joins it).
 * 4. A state too large for one entry is written as a chunked snapshot (`ChunkedWriter`): part 0
 *    is conditional on the captured revision and goes first (once a state was too large, before
 *    the text is even built, so it races like a small update); the writer then runs again while
 *    the other parts and the snapshot entry are appended unconditionally; the truncation is
 *    before part 0. Concurrent compactors stay safe: each truncates only before its own part 0,
 *    whose base is the state its snapshot entry carries, and readers never use a snapshot whose
 *    parts or following entries are not all retained.
 *
 * This class holds the automatic policy and joins concurrent calls; the compaction itself
 * (compaction-run.ts, with `ChunkedWriter`) is loaded on demand, at the first compaction: most
 * page lifetimes compact never (the default policy waits for 1,000 entries or more), so a
 * browser app does not load it at open (README, "Bundle size"). It imports nothing at run time
 * (`CompactionDeps`), so the code loaded at open stays in one file.
 */
export class Compactor<S, C extends CommandMap<S>> {
  private compacting: Promise<CompactionResult> | undefined;
  /** The compaction's code and state across compactions, once loaded. */
  private runner: CompactionRun<S, C> | undefined;

  constructor(
    private readonly log: RevisionedLog,
    private readonly model: Model<S, C>,
    private readonly clientId: string,
    private readonly policy: CompactionPolicy | undefined,
    private readonly replica: Replica<S, C>,
    private readonly reader: Reader<S, C>,
    private readonly opener: Opener<S, C>,
    private readonly writer: Writer<S, C>,
    private readonly appender: Appender,
    private readonly contention: Contention<S, C>,
    private readonly status: StatusHub,
    private readonly stats: SyncStats,
  ) {
    if (policy) replica.onApplied((batch) => this.observe(batch));
  }

  /** See `StateSynchronizer.compact`. */
  compact(): Promise<CompactionResult> {
    if (this.compacting) return this.compacting;
    const run = this.run().finally(() => {
      this.compacting = undefined;
    });
    this.compacting = run;
    return run;
  }

  /** Waits for a running compaction (on close). */
  async settled(): Promise<void> {
    await this.compacting?.catch(() => undefined);
  }

  private observe({ entries, results }: AppliedBatch): void {
    const policy = this.policy!;
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!;
      const entry = r.kind === "applied" ? r.entry : undefined;
      const kind = entry?.kind;
      if (entry?.kind === "snapshot") {
        // The state's size, for the thresholds that scale with it.
        policy.reset("parts" in entry ? entry.parts.bytes : entries[i]!.data.byteLength);
      } else if (kind === "genesis") policy.reset();
      // A chunked snapshot's parts, and entries held until one loads, are no history to compact.
      else if (kind !== "part" && r.kind !== "pending") policy.count(entries[i]!.data.byteLength);
    }
    if (!policy.due() || this.status.status !== "live" || this.compacting) return;
    this.compact().then(
      () => policy.succeeded(),
      (e: unknown) => {
        // Losing the race to other writers is not a failure: try again a little later.
        if (isStateSyncError(e, "CONFLICT") || isStateSyncError(e, "RETRY_LIMIT")) {
          return policy.deferred();
        }
        if (this.status.closed || isStateSyncError(e, "CLOSED")) return; // closing: not a problem
        const error =
          e instanceof StateSyncError
            ? e
            : new StateSyncError("UNAVAILABLE", `automatic compaction failed: ${String(e)}`, {
                cause: e,
              });
        if (policy.failed(error)) this.status.report(error);
      },
    );
  }

  private async run(): Promise<CompactionResult> {
    this.status.assertUsable();
    if (!this.runner) {
      const { CompactionRun } = await loadRun();
      this.runner ??= new CompactionRun(
        this.log,
        this.model,
        this.clientId,
        this.replica,
        this.reader,
        this.opener,
        this.writer,
        this.appender,
        this.contention,
        this.status,
        this.stats,
        deps,
      );
    }
    return this.runner.run();
  }
}
