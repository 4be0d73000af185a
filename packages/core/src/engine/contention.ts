import { backoffDelay } from "../backoff.js";
import type { IntentEntry } from "../entry.js";
import type { CommandMap } from "../model.js";
import type { Appender, Contender } from "./appender.js";
import type { Reader } from "./reader.js";
import type { AppliedBatch, Replica } from "./replica.js";
import type { StatusHub } from "./status.js";
import { OwnResends } from "./own-resends.js";
import { ended, pause, remaining, untilClosing, within, type WaitLimits } from "./wait-limits.js";

/** Conflicts in a row after which a writer announces itself with an intent entry. */
export const INTENT_AFTER_CONFLICTS = 3;
/** How long another writer's intent holds the others back without its update arriving (ms). */
const INTENT_TTL_MS = 1_000;
/** Longest an update (or a compaction) holds back for other writers' intents, in all (ms). */
const MAX_HOLD_MS = INTENT_TTL_MS;
/**
 * Longest a writer's intents, announced again or not, count while it appends nothing else (ms,
 * from the first seen): then they count again only once it has appended an update, a command
 * or a snapshot entry (a client that appends intents and nothing else must not hold writers).
 */
const MAX_INTENT_HOLD_MS = 3 * INTENT_TTL_MS;
/** Writers whose intents are ignored (`MAX_INTENT_HOLD_MS`), remembered at most. */
const MAX_IGNORED = 1_024;
/** Longest pause between reads of a replica that does not follow, waiting on an intent (ms). */
const MAX_INTENT_POLL_MS = 80;
/** Entries per writer's turn while several writers contend (`contention: "turns"`). */
const TURN = 8;
/** How long after another writer's entry a replica considers the log contended (ms). */
const CONTENDED_MS = 250;
/** Entries whose writers make up the rotation of turns. */
const ROTATION_WINDOW = 256;
/** Most turns a queued update sits out before it appends regardless. */
const MAX_TURN_WAITS = 64;

/** An update (or a compaction) that may hold back for intents: how long it did so far. */
export interface Holding {
  /** Time spent holding back for other writers' intents, ms (at most `MAX_HOLD_MS`). */
  heldMs: number;
}

/** What a writer's batch tells the contention part about itself. */
export interface ContendingBatch extends Holding {
  /** Conflicts of this batch in a row so far. */
  conflicts: number;
  /** Whether this batch already announced itself with an intent entry. */
  announced: boolean;
  /** Turns it sat out for other writers (`"turns"`). */
  turnsWaited: number;
}

/**
 * How conflicting writers share the log, so that no writer starves (issue 8).
 *
 * The kind of fault: a writer that just committed learns of it from its acknowledgement and
 * appends again at once, while the others learn of that entry later, through their followers;
 * and replicas sharing one process are served in a fixed event-loop order. Either lets one
 * writer lose every race (a loop of awaited updates in two replicas of one process reached
 * `RETRY_LIMIT`). Losers cannot be seen by winners in the log, so a loser makes itself seen:
 *
 * 1. Retry timing (`"retry"`, the default): after a first conflict a writer catches up and
 *    retries at once; after more, a live replica retries as soon as the next entry arrives (when
 *    the last winner learns of its own commit), with a full-jitter backoff as the timeout.
 * 2. Intents: after {@link INTENT_AFTER_CONFLICTS} conflicts in a row, a writer (or a
 *    compactor) appends an `intent` entry (unconditional, so it always lands; a no-op for the
 *    state). Every writer that sees an outstanding intent of another writer holds its appends
 *    (conditional and unconditional) back until that writer's next update, command or snapshot
 *    entry arrives (or {@link INTENT_TTL_MS} passes: a writer that died holds nobody back for
 *    long; a writer still losing announces again before then, keeping its place). A replica
 *    that does not follow polls the log while it waits. Intents are served in log order, so a
 *    writer that keeps losing commits within a bounded number of attempts, whatever the
 *    event-loop order or the clocks. Uncontended writers never write one.
 *    The hold is bounded whatever others append (a fresh-eyes trial: a client appending an
 *    intent every 0.9 s and nothing else held every writer as long as it went on): an update
 *    holds back for at most {@link MAX_HOLD_MS} in all, and a writer whose intents go on for
 *    {@link MAX_INTENT_HOLD_MS} without any other entry of its own is ignored until it appends
 *    one. Every wait also ends at the update's limits (`wait-limits.ts`).
 * 3. Turns (`"turns"`, opt-in): while others write, live writers take turns of {@link TURN}
 *    entries round-robin over the recent writers, computed alike by every replica from the log.
 *
 * Everything here only orders writers: correctness never depends on it (a writer that ignores
 * an intent merely conflicts).
 */
export class Contention<S, C extends CommandMap<S>> {
  /**
   * Outstanding intents of other writers: client id → revision of the intent, when it was last
   * seen (announced again), and when the writer's first intent since its last entry was seen.
   */
  private readonly intents = new Map<
    string,
    { revision: number; seenAt: number; firstSeenAt: number }
  >();
  /** Writers whose intents went on too long without another entry (see rule 2). */
  private readonly ignored = new Set<string>();
  /** Revision of this writer's outstanding intent. */
  private myIntent: number | undefined;
  /** When this writer last announced itself (ms since the epoch). */
  private myIntentAt = 0;
  private contendedAt = -Infinity;
  private lastWriterWasMe = false;
  /** Writers (client ids) of the last update and command entries, oldest first. */
  private readonly recentWriters: string[] = [];
  private entryIntervalMs = 1;
  /** This replica's unconditional appends re-sending after lost races (`contender`). */
  private readonly ownResends = new OwnResends();
  private lastEntryAt = 0;

  constructor(
    private readonly mode: "retry" | "turns",
    private readonly clientId: string,
    private readonly replica: Replica<S, C>,
    private readonly reader: Reader<S, C>,
    private readonly appender: Appender,
    private readonly status: StatusHub,
  ) {
    replica.onApplied((batch) => this.observe(batch));
  }

  /** False when `beforeAttempt` and `deferToIntents` surely return at once (the common case). */
  get mayWait(): boolean {
    return this.intents.size > 0 || this.mode === "turns" || this.ownResends.active;
  }

  /**
   * Waits until this writer may append conditionally: behind earlier intents, for its turn. Ends
   * early, and the caller goes on, when `limits` are reached (the caller checks them).
   */
  async beforeAttempt(batch: ContendingBatch, limits?: WaitLimits): Promise<void> {
    const bound = limits ?? untilClosing(this.status);
    await this.deferToIntents(batch, bound);
    if (this.mode === "turns") await this.awaitTurn(batch, bound);
  }

  /** After a conflict (caught up already): when to try again (rule 1), announcing if due (2). */
  async afterConflict(batch: ContendingBatch, round: number, limits?: WaitLimits): Promise<void> {
    const bound = limits ?? untilClosing(this.status);
    if (batch.conflicts >= INTENT_AFTER_CONFLICTS && (!batch.announced || this.intentLapsing())) {
      // Announced again when the last intent is about to lapse: a writer that stays behind (a
      // slow machine, a replica that does not follow) must not fall back to racing unaided.
      batch.announced = true;
      await this.announce(bound);
      return;
    }
    // The others hold back for this writer now: every moment it waits is wasted.
    if (batch.announced && this.myIntent !== undefined) return;
    if (round === 0 || (this.mode === "turns" && this.reader.following)) return;
    const delay = Math.min(backoffDelay(round), remaining(bound));
    if (this.reader.following) {
      await this.replica.waitUntil(this.replica.revision + 1, delay, bound.signal);
    } else await pause(delay, bound);
  }

  /**
   * Takes an unconditional append's re-sends into rules 1-2 (for `AppendLimits.contend`): each
   * is conditional on the tail its look-up checked, so other writers' appends could make it lose
   * every race. Like a conditional batch, it announces itself after
   * {@link INTENT_AFTER_CONFLICTS} conflicts in a row and holds back behind earlier intents; and
   * this replica's re-sends go one at a time, its other appends holding back (`OwnResends`).
   */
  contender(): Contender {
    const batch: ContendingBatch = { conflicts: 0, announced: false, heldMs: 0, turnsWaited: 0 };
    const token = {};
    return {
      before: async (conflicts, limits) => {
        batch.conflicts = conflicts;
        await this.ownResends.enter(token, limits);
        await this.afterConflict(batch, 0, limits);
        await this.deferToIntents(batch, limits, false);
      },
      done: () => this.ownResends.done(token),
    };
  }

  /** Appends this writer's intent entry and catches up with it. Failures only cost the intent. */
  private async announce(limits: WaitLimits): Promise<void> {
    const entry: IntentEntry = { v: 1, kind: "intent", ts: Date.now(), client: this.clientId };
    try {
      const prepared = await this.appender.prepare(entry, "the intent entry");
      const stored = await this.appender.appendUnconditional(prepared, {
        timeoutMs: 5_000,
        deadline: Math.min(Date.now() + 5_000, limits.deadline),
        signal: limits.signal,
      });
      this.myIntent ??= stored.revision; // announcing again keeps this writer's place
      this.myIntentAt = Date.now();
      await within(this.reader.catchUp(stored.revision), limits);
    } catch {
      // Not announced: the writer simply retries as before.
    }
  }

  /** True when this writer has no outstanding intent or the others will soon stop honouring it. */
  private intentLapsing(): boolean {
    return this.myIntent === undefined || Date.now() - this.myIntentAt > INTENT_TTL_MS / 2;
  }

  /**
   * Waits while another writer's intent is outstanding and older than this writer's own (rule
   * 2), for at most `MAX_HOLD_MS` of `holding`'s life in all, and never past `limits`; with
   * `own`, first behind this replica's re-sending unconditional appends.
   * Unconditional appends wait too: they never conflict themselves, but each one makes the
   * announced writer (or compactor) lose another race.
   */
  async deferToIntents(holding: Holding, limits?: WaitLimits, own = true): Promise<void> {
    const bound = limits ?? untilClosing(this.status);
    if (own && this.ownResends.active) await this.ownResends.holdBack(holding, bound, MAX_HOLD_MS);
    let pollMs = 5;
    for (;;) {
      const now = Date.now();
      const first = this.firstIntent(now);
      if (!first || this.status.stopped || ended(bound)) return;
      if (this.myIntent !== undefined && this.myIntent < first.revision) return;
      const left = Math.min(
        first.seenAt + INTENT_TTL_MS - now,
        MAX_HOLD_MS - holding.heldMs,
        remaining(bound),
      );
      if (left <= 0) return;
      if (this.reader.following) {
        await this.replica.waitUntil(this.replica.revision + 1, left, bound.signal);
      } else {
        // A replica that does not follow learns that the announced writer went first only by
        // reading: waiting for its own revision to move would hold it for the whole TTL, long
        // enough for its own intent to lapse (a non-live compactor then lost 100 races in CI).
        await pause(Math.min(left, pollMs), bound);
        pollMs = Math.min(MAX_INTENT_POLL_MS, pollMs * 2);
        try {
          await within(this.reader.catchUp(), bound);
        } catch {
          return; // only ordering is at stake: the append itself reports what is wrong
        }
      }
      holding.heldMs += Date.now() - now;
    }
  }

  /**
   * The earliest outstanding intent of another writer. Drops the intents that lapsed, and those
   * of writers whose intents went on for `MAX_INTENT_HOLD_MS` without another entry (rule 2).
   */
  private firstIntent(now: number): { revision: number; seenAt: number } | undefined {
    let first: { revision: number; seenAt: number } | undefined;
    for (const [client, intent] of this.intents) {
      if (now - intent.seenAt > INTENT_TTL_MS) this.intents.delete(client);
      else if (now - intent.firstSeenAt > MAX_INTENT_HOLD_MS) {
        this.intents.delete(client);
        if (this.ignored.size >= MAX_IGNORED) {
          this.ignored.delete(this.ignored.values().next().value!);
        }
        this.ignored.add(client);
      } else if (!first || intent.revision < first.revision) first = intent;
    }
    return first;
  }

  /**
   * Notes who wrote the consumed entries, their intents, and the pace of the log. Runs for every
   * batch a replica consumes, a pure follower's too (it may write later, and must then know the
   * outstanding intents), so the common case is kept cheap: the pace, the recent writers and who
   * wrote last feed only `"turns"`, and in `"retry"` mode an entry that is no intent costs a
   * look at the (usually empty) intents (issue 13: 1.75 µs an entry per follower before).
   */
  private observe({ entries, results, mine }: AppliedBatch): void {
    const turns = this.mode === "turns";
    let now = 0;
    if (turns) {
      now = Date.now();
      const gap = (now - this.lastEntryAt) / results.length;
      this.entryIntervalMs += (Math.min(gap, 100) - this.entryIntervalMs) / 8;
      this.lastEntryAt = now;
      if (this.recentWriters.length > 2 * ROTATION_WINDOW) {
        this.recentWriters.splice(0, this.recentWriters.length - ROTATION_WINDOW);
      }
    }
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      if (result.kind !== "applied" && result.kind !== "skipped") continue;
      if (turns) this.lastWriterWasMe = mine[i]!;
      if (result.kind !== "applied") continue;
      const entry = result.entry;
      if (entry.kind === "intent") {
        now ||= Date.now();
        const revision = entries[i]!.revision;
        const known = this.intents.get(entry.client);
        if (mine[i]) this.myIntent ??= revision;
        else if (this.ignored.size > 0 && this.ignored.has(entry.client)) continue;
        // A writer announcing again keeps its place in the order and gets a fresh TTL (but not
        // a longer hold than MAX_INTENT_HOLD_MS since its first intent: see `firstIntent`).
        else if (known && now - known.seenAt <= INTENT_TTL_MS) known.seenAt = now;
        else this.intents.set(entry.client, { revision, seenAt: now, firstSeenAt: now });
        continue;
      }
      const writes = entry.kind === "update" || entry.kind.startsWith("command");
      if (!writes && entry.kind !== "snapshot") continue;
      // The writer of an intent went first: its intent is done (a compactor's is a snapshot).
      if (mine[i]) this.myIntent = undefined;
      else {
        if (this.intents.size > 0) this.intents.delete(entry.client);
        if (this.ignored.size > 0) this.ignored.delete(entry.client); // it writes: heard again
      }
      if (entry.kind === "snapshot" || !turns) continue;
      this.recentWriters.push(entry.client);
      if (!mine[i]) this.contendedAt = now;
    }
  }

  /**
   * `"turns"`: while other writers are active (another writer's entry in the last
   * `CONTENDED_MS`), writers take turns of `TURN` entries aligned on revisions, round-robin: a
   * writer keeps appending during its turn; the turn's last entry (a multiple of `TURN`) hands
   * the next turn to the writer after it in the sorted ids of the recent writers. Every wait ends
   * when the log goes quiet, so this only orders writers and never blocks one.
   */
  private async awaitTurn(batch: ContendingBatch, limits: WaitLimits): Promise<void> {
    for (let i = 0; i < MAX_TURN_WAITS; i++) {
      if (!this.reader.following || Date.now() - this.contendedAt > CONTENDED_MS) return;
      const r = this.replica.revision;
      if (this.lastWriterWasMe) {
        if (r % TURN !== 0) return; // my turn goes on
        if (!(await this.waitWhileActive(r + 1, limits))) return; // let another writer go first
        continue;
      }
      const end = Math.ceil(r / TURN) * TURN;
      if (r < end) {
        if (!(await this.waitWhileActive(end, limits))) return;
        continue;
      }
      if (this.nextInRotation() === this.clientId) return;
      batch.turnsWaited += 1;
      if (!(await this.waitWhileActive(r + TURN, limits))) return;
    }
  }

  /** The writer after the last one, in the sorted ids of the recent writers and this one. */
  private nextInRotation(): string {
    const writers = [...new Set(this.recentWriters.slice(-ROTATION_WINDOW))];
    if (!writers.includes(this.clientId)) writers.push(this.clientId);
    writers.sort();
    const last = this.recentWriters[this.recentWriters.length - 1] ?? "";
    return writers.find((w) => w > last) ?? writers[0]!;
  }

  /** True when `revision` is reached; false when the log went quiet or `limits` ended meanwhile. */
  private async waitWhileActive(revision: number, limits: WaitLimits): Promise<boolean> {
    const quietMs = 4 + 4 * Math.min(20, Math.max(0.25, this.entryIntervalMs));
    for (;;) {
      const before = this.replica.revision;
      const ms = Math.min(quietMs, remaining(limits));
      if (await this.replica.waitUntil(revision, ms, limits.signal)) return true;
      if (this.replica.revision === before || this.status.stopped || ended(limits)) return false;
    }
  }
}
