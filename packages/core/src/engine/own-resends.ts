import type { Holding } from "./contention.js";
import { ENDED, ended, within, type WaitLimits } from "./wait-limits.js";

/**
 * This replica's unconditional appends that re-send after lost races (`Contention.contender`;
 * appender invariant 2: each re-send is conditional on the tail its look-up checked). Every
 * entry this replica appends meanwhile moves that tail, and intents hold back other writers
 * only, so:
 * 1. they look up and re-send one at a time, first come first served: re-sent together, each
 *    moved the tail the others had checked (a trial: 20 commands of one replica re-sending at
 *    once, on a log taking 250 appends a second, most failed `UNKNOWN_OUTCOME`);
 * 2. the replica's other appends (conditional batches, other commands, compactions) hold back
 *    while any of them is under way, for a bounded time (a trial: a replica whose own
 *    conditional loop committed 2,000 updates meanwhile failed all 4 such commands, none
 *    stored, while it announced 300 intents).
 * Every wait ends at its limits: only the order of appends is at stake.
 */
export class OwnResends {
  private readonly resending = new Set<object>();
  /** The one whose turn it is to look up and re-send, and the others in line. */
  private holder: object | undefined;
  private readonly line: { token: object; wake: () => void }[] = [];
  /** Resolves when the last of them is decided. */
  private decided: { promise: Promise<void>; resolve: () => void } | undefined;

  /** True while one of them is under way. */
  get active(): boolean {
    return this.resending.size > 0;
  }

  /**
   * Before a re-send of `token` (an append): ends its turn if it had one and waits for the next
   * (rule 1), never past `limits`. Its turn lasts until its next `enter` or its `done`.
   */
  async enter(token: object, limits: WaitLimits): Promise<void> {
    this.resending.add(token);
    this.pass(token); // to the back of the line
    if (this.holder === undefined) {
      this.holder = token;
      return;
    }
    let wake!: () => void;
    const turn = new Promise<void>((r) => (wake = r));
    const waiter = { token, wake };
    this.line.push(waiter);
    if ((await within(turn, limits)) === ENDED) {
      const at = this.line.indexOf(waiter);
      if (at >= 0) this.line.splice(at, 1); // goes ahead out of turn
    }
  }

  /** `token`'s append is decided (stored, or failed). */
  done(token: object): void {
    this.pass(token);
    if (!this.resending.delete(token) || this.resending.size > 0) return;
    this.decided?.resolve();
    this.decided = undefined;
  }

  /**
   * Waits while any of them is under way (rule 2), for at most `maxMs` of `holding`'s life in
   * all, and never past `limits`.
   */
  async holdBack(holding: Holding, limits: WaitLimits, maxMs: number): Promise<void> {
    while (this.resending.size > 0 && holding.heldMs < maxMs && !ended(limits)) {
      const now = Date.now();
      if (!this.decided) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.decided = { promise, resolve };
      }
      const deadline = Math.min(limits.deadline, now + maxMs - holding.heldMs);
      await within(this.decided.promise, { deadline, signal: limits.signal });
      holding.heldMs += Date.now() - now;
    }
  }

  /** Ends `token`'s turn (if it holds it) and hands it to the next in line. */
  private pass(token: object): void {
    if (this.holder !== token) {
      const at = this.line.findIndex((w) => w.token === token);
      if (at >= 0) this.line.splice(at, 1);
      return;
    }
    const next = this.line.shift();
    this.holder = next?.token;
    next?.wake();
  }
}
