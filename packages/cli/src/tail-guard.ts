/**
 * What `tail` does across a lost connection, as a replica does (docs/guarantees.md, "A log that
 * went back"): after the connection is back, the log must still hold the last entry `tail`
 * printed before anything more is printed. A server restarted on an older copy of its store
 * (a power loss, a backup restored) may hold fewer entries, or other ones at the same
 * revisions; the follower would resume after the last entry printed and splice the two
 * histories without a word (fresh-eyes trial, stop 25: revisions 5-7 of one history, then 8 of
 * another). Entries delivered while the check runs are held, then printed in order; a log that
 * went back ends `tail` with `LOG_REPLACED` (exit 1).
 *
 * It also says when entries were removed before `tail` read them: in a log of one state (its
 * own stream, where revisions follow each other) an entry after a gap means the ones between
 * were compacted away or purged while `tail` was behind (a fresh-eyes trial, stop 25: a `tail`
 * held up while 2,000 entries were written and compacted skipped them without a word). In a
 * shared stream revisions skip other states' entries, so nothing is said there.
 */
import { logWentBack, StateSyncError, type LogEntry, type RevisionedLog } from "@statesync/node";

type Checked = Pick<RevisionedLog, "info" | "entryAt" | "contiguous">;

/** See the module comment. */
export class WentBackGuard {
  /** The last entry delivered (printed or replayed): what the log must still hold. */
  private last: { revision: number; messageId: string | undefined } | undefined;
  /** Entries delivered since the connection was lost, till the check answers. */
  private held: LogEntry[] | undefined;
  private checks = 0;
  private stopped = false;

  constructor(
    private readonly log: Checked,
    private readonly print: (entry: LogEntry) => void,
    private readonly fail: (error: StateSyncError) => void,
    private readonly skipped: (from: number, to: number) => void = () => undefined,
  ) {}

  /** The entry at `revision` (the latest when `tail` started), before any is delivered. */
  async start(revision: number): Promise<void> {
    if (revision < 1) return;
    const entry = await this.log.entryAt(revision);
    this.last ??= { revision, messageId: entry?.messageId };
  }

  /** An entry the follower delivered: printed now, or held while a check runs. */
  entry(entry: LogEntry): void {
    if (this.held) return void this.held.push(entry);
    const after = this.last?.revision;
    if (this.log.contiguous && after !== undefined && entry.revision > after + 1) {
      this.skipped(after + 1, entry.revision - 1);
    }
    this.last = { revision: entry.revision, messageId: entry.messageId };
    this.print(entry);
  }

  /** The connection was lost: entries are held until the check after it answers. */
  lost(): void {
    this.held ??= [];
  }

  /**
   * The connection is back: checks (asking again until the log answers), then prints or fails.
   * Resolves true when the log still holds what was printed (`tail` then says it follows again).
   */
  async back(): Promise<boolean> {
    const check = ++this.checks;
    for (let wait = 250; !this.stopped && check === this.checks; wait = Math.min(wait * 2, 5_000)) {
      let problem: string | undefined;
      try {
        // The engine's check, the last entry printed standing for a replica's position.
        const wentBack = this.last && (await logWentBack(this.log, this.last));
        problem = wentBack && String(wentBack.details.problem);
      } catch {
        await new Promise((r) => setTimeout(r, wait)); // unanswered: no answer, ask again
        continue;
      }
      if (check !== this.checks || this.stopped) return false; // lost again: a newer check
      if (problem !== undefined) {
        this.stopped = true;
        this.fail(
          new StateSyncError(
            "LOG_REPLACED",
            `the log went back while tail followed it: ${problem} (a server that lost acknowledged appends, or a store restored from a backup); what it holds after that is another history: run tail again`,
            { details: { rewound: true } },
          ),
        );
        return false;
      }
      const held = this.held ?? [];
      this.held = undefined;
      for (const entry of held) this.entry(entry);
      return true;
    }
    return false;
  }

  /** Stops checking (tail is ending). */
  stop(): void {
    this.stopped = true;
  }
}
