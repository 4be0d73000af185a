import {
  CHECKED_COMMAND_FORMAT,
  COMMANDS_FORMAT,
  type CommandEntry,
  type CommandsEntry,
  type EntryOrigin,
} from "../entry.js";
import { isStateSyncError } from "../errors.js";
import type { Appender, Contender } from "./appender.js";
import type { StatusHub } from "./status.js";
import { unsent, waitLimits, within, type UpdateLimits } from "./wait-limits.js";

/** Appends that may travel at once before further commands wait to share one. */
export const MAX_TRAVELLING = 4;
/** Most commands one `commands` entry carries (readers accept up to `MAX_COMMANDS_PER_ENTRY`). */
export const MAX_GROUP = 128;

/** One unconditional command to append: its entry's fields and its caller's limits. */
export interface QueuedCommand {
  readonly name: string;
  readonly args: unknown;
  readonly seed: number;
  /** The entry's `ts`, ms since the epoch. */
  readonly ts: number;
  readonly limits: UpdateLimits;
}

/** Where a command was stored: the entry's revision and the command's index in it. */
export interface CommandSent {
  readonly revision: number;
  readonly index: number;
}

/** What sending commands needs of the other parts. */
export interface CommandSendParts {
  readonly appender: Appender;
  readonly clientId: string;
  readonly status: StatusHub;
  /** The writer's model version (the entries' `mv`). */
  modelVersion(): number;
  /** An append's part in the contention rules. */
  contender(): Contender;
  /** The replica's revision now (an entry appended from now on lands after it). */
  revision(): number;
  /**
   * Waits until the replica applied `revision`, within the calls' limits (the earliest deadline,
   * any signal); never rejects. Once per entry, not once per command.
   */
  applied(revision: number, calls: readonly QueuedCommand[]): Promise<void>;
}

/** The parts {@link commandSendParts} builds {@link CommandSendParts} from. */
interface WriterSide {
  readonly appender: Appender;
  readonly clientId: string;
  readonly status: StatusHub;
  readonly upgrader: { readonly version: number };
  readonly contention: { contender(): Contender };
  readonly replica: { readonly revision: number };
  readonly reader: {
    noteStored(revision: number): void;
    catchUp(revision: number): Promise<unknown>;
  };
}

/** The writer's {@link CommandSendParts}. */
export function commandSendParts(p: WriterSide): CommandSendParts {
  return {
    ...{ appender: p.appender, clientId: p.clientId, status: p.status },
    modelVersion: () => p.upgrader.version,
    contender: () => p.contention.contender(),
    revision: () => p.replica.revision,
    applied: async (revision, calls) => {
      // Stored. Its outcome is what every replica does with it (the writer's invariant 7).
      if (p.replica.revision >= revision) return;
      p.reader.noteStored(revision);
      const limits = waitLimits(
        calls.map((c) => c.limits),
        p.status.signal,
      );
      const caughtUp = within(p.reader.catchUp(revision), limits);
      await caughtUp.catch(() => undefined).finally(() => limits.dispose());
    },
  };
}

/**
 * Appends `calls` as one entry, unconditionally, exactly once: one command as a `command` entry
 * (format 3), several as a `commands` entry (format 4). Resolves with the revision it was stored
 * at, once the replica applied it or the calls' limits ended (`CommandSendParts.applied`). The
 * append's limits are the calls' shortest `outcomeTimeoutMs` and earliest deadline; a signal is
 * passed only for a single call (grouped calls have none: `CommandGroups`).
 *
 * `ended` (a group's): when the append's outcome is unknown because some calls' own limits
 * ended (`UNKNOWN_OUTCOME` at the earliest deadline), those calls are handed to it with that
 * error and the append goes on for the others as its re-send (same bytes, same message id:
 * stored once), within their limits. Before, one call with a short `outcomeTimeoutMs` failed
 * every command of its group `UNKNOWN_OUTCOME`, though the entry was stored (a review: 10 of
 * 10 callers with 30 s limits, for one of 450 ms), the fault a conditional batch had before
 * (`WriteBatch.afterFailedAppend`).
 */
export async function sendCommands(
  p: CommandSendParts,
  calls: readonly QueuedCommand[],
  origin?: EntryOrigin,
  ended?: (call: QueuedCommand, error: unknown) => void,
): Promise<number> {
  const first = calls[0]!;
  const common = { ts: first.ts, client: p.clientId, mv: p.modelVersion() };
  const entry: CommandEntry | CommandsEntry =
    calls.length === 1
      ? {
          // Format 3: every replica checks the command's result (docs/format.md).
          ...{ v: CHECKED_COMMAND_FORMAT, kind: "command", ...common },
          ...{ seed: first.seed, name: first.name, args: first.args },
          ...(origin ? { origin } : {}),
        }
      : {
          ...{ v: COMMANDS_FORMAT, kind: "commands", ...common },
          commands: calls.map((c) => ({ seed: c.seed, name: c.name, args: c.args })),
        };
  const what = calls.length === 1 ? "the command" : `${calls.length} commands together`;
  const prepared = await p.appender.prepare(entry, what);
  const after = p.revision(); // the entry lands after it
  let live = calls; // the calls whose limits have not ended
  let resumed: { sentAs: string; after: number } | undefined;
  for (;;) {
    try {
      const stored = await p.appender.appendUnconditional(
        prepared,
        {
          timeoutMs: Math.min(...live.map((c) => c.limits.outcomeTimeoutMs)),
          signal: calls.length === 1 ? first.limits.signal : undefined,
          deadline: Math.min(...live.map((c) => c.limits.deadline)),
          contend: p.contender(), // its re-sends lose no race for ever
        },
        resumed,
      );
      await p.applied(stored.revision, live);
      return stored.revision;
    } catch (e) {
      const messageId = isStateSyncError(e, "UNKNOWN_OUTCOME") ? e.details.messageId : undefined;
      if (ended === undefined || typeof messageId !== "string" || p.status.stopped) throw e;
      const over = live.filter((c) => unsent(p.status, c.limits) !== undefined);
      if (over.length === 0 || over.length === live.length) throw e;
      for (const c of over) ended(c, e);
      live = live.filter((c) => !over.includes(c));
      resumed = { sentAs: messageId, after };
    }
  }
}

interface Waiting extends QueuedCommand {
  args: unknown;
  resolve(sent: CommandSent): void;
  reject(error: unknown): void;
}

/**
 * Unconditional commands a replica has in flight together share appends (issue 8: with 256 in
 * flight, one append per command cost the client about 3x the CPU of a raw publish). A command
 * is sent at once while fewer than {@link MAX_TRAVELLING} appends travel, so an awaited command
 * is never delayed; otherwise it waits for one of them to end and goes with the commands that
 * waited with it, up to {@link MAX_GROUP}, in call order, as one `commands` entry. Each caller
 * learns the entry's revision and its index in it. Only calls without a signal wait here (one
 * caller's abort must not end others' append); the caller passes the others to
 * {@link sendCommands} directly.
 *
 * A group refused before it was sent, as too large for the log, is split in halves; one refused
 * otherwise (an argument no reader accepts) is sent one command at a time, so each caller gets
 * its own outcome.
 */
export class CommandGroups {
  private travelling = 0;
  private waiting: Waiting[] = [];
  /**
   * Set at the earliest deadline of the calls waiting: one timer, not one per call. A call that
   * waits past its deadline fails then (`UNAVAILABLE`, `notSent`), not when an append ends
   * (before, a call with `outcomeTimeoutMs: 200` waiting behind appends to a slow log settled
   * 1.5 s later; behind a frozen server, at the travelling calls' 30 s).
   */
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;

  /** `maxTravelling`: Infinity sends every command at once, alone (`groupCommands: false`). */
  constructor(
    private readonly p: CommandSendParts,
    private readonly maxTravelling = MAX_TRAVELLING,
  ) {}

  /** Sends `call` alone or with others (see the class); what it resolves with. */
  submit(call: QueuedCommand): Promise<CommandSent> {
    return new Promise<CommandSent>((resolve, reject) => {
      const w: Waiting = { ...call, resolve, reject };
      this.waiting.push(w);
      this.pump();
      if (this.waiting.length === 0) return; // sent now, its arguments encoded already
      // It waits: its arguments as they are at the call (checked JSON), as a command sent at
      // once has them. Before, the caller's object was encoded when the group was sent: a
      // caller that reused it for its next call stored that call's arguments twice (a review:
      // 8 of 12 calls in a loop stored the last value), or arguments its schema refuses.
      if (call.args !== undefined) w.args = JSON.parse(JSON.stringify(call.args)) as unknown;
      this.expireAt(call.limits.deadline);
    });
  }

  private expireAt(deadline: number): void {
    if (deadline >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = deadline;
    const ms = Math.min(2 ** 31 - 1, Math.max(0, deadline - Date.now())); // (setTimeout's most)
    this.timer = setTimeout(() => this.expire(), ms);
  }

  /** Fails the calls that waited past their deadlines; the timer for the next one. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    let next = Infinity;
    this.waiting = this.waiting.filter((w) => {
      const error = unsent(this.p.status, w.limits);
      if (error) w.reject(error);
      else next = Math.min(next, w.limits.deadline);
      return !error;
    });
    if (next < Infinity) this.expireAt(next);
  }

  /**
   * Sends every call still waiting at once, in groups, whatever travels (`close()`: a command
   * called before it is sent, as when each went alone, and `close()` waits for its outcome).
   */
  flush(): Promise<void> {
    const sends: Array<Promise<void>> = [];
    while (this.waiting.length > 0) sends.push(this.send(this.waiting.splice(0, MAX_GROUP)));
    this.pump(); // (clears the timer)
    return Promise.all(sends).then(() => undefined);
  }

  private pump(): void {
    while (this.travelling < this.maxTravelling && this.waiting.length > 0) {
      const group = this.waiting.splice(0, MAX_GROUP).filter((w) => {
        const error = unsent(this.p.status, w.limits); // it waited past its limits, or stopped
        if (error) w.reject(error);
        return !error;
      });
      if (group.length === 0) continue;
      this.travelling += 1;
      void this.send(group).finally(() => {
        this.travelling -= 1;
        this.pump();
      });
    }
    if (this.waiting.length === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      [this.timer, this.timerAt] = [undefined, Infinity];
    }
  }

  private async send(group: Waiting[]): Promise<void> {
    let revision: number;
    try {
      // A call whose limits ended while its entry's outcome was unknown: that outcome, alone.
      revision = await sendCommands(this.p, group, undefined, (w, e) => (w as Waiting).reject(e));
    } catch (e) {
      const tooLarge = isStateSyncError(e, "PAYLOAD_TOO_LARGE");
      if (group.length > 1 && (tooLarge || isStateSyncError(e, "VALIDATION"))) {
        const half = tooLarge ? Math.ceil(group.length / 2) : 1;
        for (let i = 0; i < group.length; i += half) await this.send(group.slice(i, i + half));
        return;
      }
      // Nothing was sent and some calls' limits ended (the earliest deadline was the append's):
      // those fail as not sent, the others go on in an entry without them.
      const notSent = isStateSyncError(e) && e.details.notSent === true;
      const over = notSent && !this.p.status.stopped ? group.filter((w) => this.over(w)) : [];
      if (over.length > 0 && over.length < group.length) {
        for (const w of over) w.reject(unsent(this.p.status, w.limits));
        await this.send(group.filter((w) => !over.includes(w)));
        return;
      }
      for (const w of group) w.reject(e);
      return;
    }
    group.forEach((w, index) => w.resolve({ revision, index })); // (a rejected one stays so)
  }

  private over(w: Waiting): boolean {
    return unsent(this.p.status, w.limits) !== undefined;
  }
}
