import { StateSyncError, type LogConfigWatcher, type RevisionedLog } from "@statesync/core";
import { errorFromWire, errorToWire, MAX_WARNINGS } from "./protocol.js";

type WireError = ReturnType<typeof errorToWire>;

/** What a leader's beat says of its log's notices (`unwatched`, `warnings`). */
export interface BeatNotices {
  unwatched?: string;
  configNotices?: true;
  warnings?: WireError[];
}

/**
 * The optional notices of `RevisionedLog` (`watchConfig`, `watchWarnings`) for the tabs' log
 * (docs/offline.md, "Tabs"): the leading tab watches its own log and tells the other tabs
 * (a `config` message for each configuration notice; `unwatched` and `warnings` in its beats, so a
 * tab that opens later hears them too), and every tab's watchers hear them as from a log of
 * their own. Before, `TabLog` had neither method: no tab's replica heard its log's warnings (a
 * stream without `deny_delete`, fan-out refused), and every tab polled the configuration.
 *
 * Configuration watchers hear `onChange` whenever the lead changes (notices sent meanwhile are
 * lost: `info()` decides), and `onUnavailable` (then nothing more) when the leader's log cannot
 * send notices or has no `watchConfig` at all: the replica polls, as it would on that log. So
 * do a follower's under a leader of a version before these notices (its beats lack
 * `configNotices`: it posts no `config` message; before, such a follower's replica relied on
 * notices that never came and checked the configuration every 7.5 min instead of 45 s).
 * Warnings are told once each (by code and message), later listeners hearing the ones told.
 */
export class LeadNotices {
  private readonly watchers = new Set<LogConfigWatcher>();
  private readonly listeners = new Set<(warning: StateSyncError) => void>();
  private readonly warnings: StateSyncError[] = [];
  private readonly warned = new Set<string>();
  /** Leading: why this lead's log sends no configuration notices; its warnings, for the beats. */
  private unwatched: string | undefined;
  private leadWarnings: WireError[] = [];
  /** Following: the tab whose beats were heard last. */
  private leader: string | undefined;

  /** See `RevisionedLog.watchConfig`. */
  watchConfig(watcher: LogConfigWatcher): () => void {
    this.watchers.add(watcher);
    if (this.unwatched !== undefined) this.unavailable(this.unwatched);
    return () => void this.watchers.delete(watcher);
  }

  /** See `RevisionedLog.watchWarnings`. */
  watchWarnings(listener: (warning: StateSyncError) => void): () => void {
    this.listeners.add(listener);
    for (const w of [...this.warnings]) call(() => listener(w));
    return () => void this.listeners.delete(listener);
  }

  /**
   * Leading: watches `log` (this lead's own) and tells this tab's watchers; `postChange` tells
   * the other tabs of a configuration notice. Returns the function that stops watching.
   */
  lead(log: RevisionedLog, postChange: () => void): () => void {
    this.unwatched = undefined;
    this.leadWarnings = [];
    this.changed();
    const stopWarnings = log.watchWarnings?.((w) => {
      if (this.leadWarnings.length < MAX_WARNINGS) this.leadWarnings.push(errorToWire(w));
      this.warn(w);
    });
    let stopConfig: (() => void) | undefined;
    const noNotices = (why: string, error?: unknown) => {
      this.unwatched ??= why;
      this.unavailable(why, error);
    };
    if (typeof log.watchConfig !== "function") {
      noNotices("the leading tab's log sends no configuration notices");
    } else {
      try {
        stopConfig = log.watchConfig({
          onChange: () => {
            this.changed();
            postChange();
          },
          onUnavailable: (e) => noNotices(e instanceof Error ? e.message : String(e), e),
        });
      } catch (e) {
        noNotices(e instanceof Error ? e.message : String(e), e);
      }
    }
    return () => {
      stopWarnings?.();
      stopConfig?.();
      this.unwatched = undefined;
      this.leadWarnings = [];
    };
  }

  /** Leading: what the next beat says. */
  forBeat(): BeatNotices {
    return {
      configNotices: true,
      ...(this.unwatched !== undefined ? { unwatched: this.unwatched.slice(0, 2048) } : {}),
      ...(this.leadWarnings.length > 0 ? { warnings: this.leadWarnings } : {}),
    };
  }

  /** Following: a beat of the leader `from`. */
  heardBeat(from: string, notices: BeatNotices): void {
    if (from !== this.leader) {
      this.leader = from;
      this.changed();
    }
    if (notices.unwatched !== undefined) this.unavailable(notices.unwatched);
    else if (notices.configNotices !== true) this.unavailable(OLDER_LEADER);
    for (const w of notices.warnings ?? []) this.warn(errorFromWire(w));
  }

  /** A configuration notice (the leader's `config` message, or this lead's own log). */
  changed(): void {
    for (const w of [...this.watchers]) call(() => w.onChange());
  }

  /**
   * Each watcher hears `onUnavailable` once (`error`: the leading tab's log's own, else
   * `UNAVAILABLE` saying `why`), then nothing more: its replica polls.
   */
  private unavailable(why: string, error: unknown = noticesUnavailable(why)): void {
    const watchers = [...this.watchers];
    this.watchers.clear();
    for (const w of watchers) call(() => w.onUnavailable(error));
  }

  private warn(warning: StateSyncError): void {
    const key = `${warning.code}\n${warning.message}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warnings.push(warning);
    for (const l of [...this.listeners]) call(() => l(warning));
  }
}

/** Why a follower's watchers hear no notices under a leader that beats without `configNotices`. */
const OLDER_LEADER =
  "the leading tab runs a version of the app that sends no configuration notices";

/** Why a follower tab's watchers hear no notices, as their `onUnavailable` error. */
function noticesUnavailable(why: string): StateSyncError {
  return new StateSyncError("UNAVAILABLE", `the leading tab's configuration notices: ${why}`);
}

/** Runs a listener; its failure is its own. */
function call(fn: () => void): void {
  try {
    fn();
  } catch {
    // a listener's failure is its own
  }
}
