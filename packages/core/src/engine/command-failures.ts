import type { StateSyncError } from "../errors.js";

/** How many failed commands a replica remembers for their writers, unless watched. */
const MAX_FAILED = 1_024;

/**
 * The `COMMAND_FAILED` errors of the commands a replica consumed as no-ops, for the writers that
 * sent them: an unconditional command's caller asks for its own once its entry is stored and
 * applied. The last {@link MAX_FAILED} are kept, and every one a command still in flight may ask
 * for ({@link watch}).
 */
export class CommandFailures {
  /** By `"revision/index"` (index 0 for a `command` entry), oldest first. */
  private readonly failed = new Map<string, StateSyncError>();
  /** The revisions commands in flight were sent at, and how many. */
  private readonly watches = new Map<number, number>();
  /** `[from, to]`: revisions after `from` up to `to` the replica passed over while watched. */
  private passed: Array<[number, number]> = [];

  /** The error of the command at `index` of the entry at `revision`, if it failed and is kept. */
  get(revision: number, index = 0): StateSyncError | undefined {
    return this.failed.get(`${revision}/${index}`);
  }

  /**
   * The replica went from `from` to a state at `to` without applying the entries between (a
   * snapshot entry after a truncation): whether their commands failed is not known here.
   * Remembered while commands in flight may ask ({@link passedOver}).
   */
  passOver(from: number, to: number): void {
    if (this.watches.size > 0 && to > from) this.passed.push([from, to]);
  }

  /** Whether the replica passed over the entry at `revision` without applying it. */
  passedOver(revision: number): boolean {
    return this.passed.some(([from, to]) => revision > from && revision <= to);
  }

  /** Keeps `error` (`details.revision`, `details.index`). */
  note(error: StateSyncError): void {
    const { revision, index } = error.details;
    if (typeof revision !== "number") return;
    this.failed.set(`${revision}/${typeof index === "number" ? index : 0}`, error);
    this.prune();
  }

  /**
   * Keeps every failure after `from` (the replica's revision now) until the returned function is
   * called: an unconditional command sent now lands after it, and asks for its failure only once
   * acknowledged and applied. With thousands in flight, more than {@link MAX_FAILED} others could
   * fail in between (a new user's trial: 3,976 of 5,000 failing calls resolved as applied).
   */
  watch(from: number): () => void {
    this.watches.set(from, (this.watches.get(from) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.watches.get(from)! - 1;
      if (left > 0) this.watches.set(from, left);
      else this.watches.delete(from);
      this.prune();
    };
  }

  /** Forgets the oldest failures past {@link MAX_FAILED} that no command in flight may ask for. */
  private prune(): void {
    if (this.failed.size <= MAX_FAILED && this.passed.length === 0) return;
    let floor = Infinity; // a watched command's entry lies after its `from`
    for (const from of this.watches.keys()) floor = Math.min(floor, from);
    if (this.passed.length > 0) this.passed = this.passed.filter(([, to]) => to > floor);
    if (this.failed.size <= MAX_FAILED) return;
    for (const [key, error] of this.failed) {
      if (this.failed.size <= MAX_FAILED || (error.details.revision as number) > floor) return;
      this.failed.delete(key);
    }
  }
}
