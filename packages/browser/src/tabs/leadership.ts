import { BEAT_MS, DEAD_MS } from "./protocol.js";

/** What {@link Leadership} needs of `navigator.locks` (the Web Locks API). */
export interface LockManagerLike {
  request(name: string, callback: (lock: unknown) => Promise<void>): Promise<unknown>;
}

/** What {@link Leadership} needs of `localStorage`: one synchronous, origin-wide cell. */
export interface TokenStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Options of {@link Leadership}. */
export interface LeadershipOptions {
  /** The lock's and the token's name: one per origin and state. */
  readonly name: string;
  /** This tab's id (random per page load). */
  readonly tabId: string;
  readonly locks: LockManagerLike;
  readonly tokens: TokenStore;
  /** This tab leads now, under fencing `epoch`. */
  onLead(epoch: number): void;
  /** This tab no longer leads (it closed, or a newer epoch fenced it). */
  onStepDown(): void;
}

/**
 * Who of the tabs of one origin leads for one state (docs/offline.md, "Tabs").
 *
 * The **token** (`localStorage[name]` = `"<epoch>:<tabId>"`) says who leads: a tab leads exactly
 * while the token is its own. Taking the lead writes a token with the next epoch. `localStorage`
 * is synchronous and shared by the origin's tabs, so a leader checks the token right before each
 * append (`stillLeads()`): a leader that was frozen and thaws finds a newer epoch there before it
 * can send anything, and steps down (the fencing).
 *
 * The **Web Lock** orders the normal succession: every tab queues for it; the tab that holds it
 * takes the lead as soon as no leader is alive (no token, a `bye`, or no beat for `DEAD_MS`). A
 * leader that is frozen keeps its lock, so the others take the lead without it once its beats
 * have been missing for twice `DEAD_MS` (with jitter, so that mostly one tries; when two do, the
 * later token wins and the other steps down at its next check).
 *
 * Invariants:
 * 1. `leading` is true only while the token is this tab's (checked every beat and before appends).
 * 2. An epoch is never taken twice by one tab, and each new leader takes one above the token's.
 * 3. A tab that stops leading releases the lock and queues for it again (unless closed).
 * 4. A tab that was frozen itself (its beat timer fell behind by more than `DEAD_MS`) takes no
 *    one for dead until it has listened for `DEAD_MS` again: it would otherwise take the lead
 *    from a live leader whose beats were waiting in its own queue (seen in e2e: epoch 3).
 */
export class Leadership {
  leading = false;
  epoch = 0;
  private readonly heard = new Map<string, number>();
  /** Since when this tab has been watching (reset after it was frozen itself). */
  private started = Date.now();
  private lastTick = Date.now();
  private lockHeld = false;
  private releaseLock: (() => void) | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  constructor(private readonly o: LeadershipOptions) {}

  /** Queues for the lock and starts watching. */
  start(): void {
    this.queueForLock();
    this.timer = setInterval(() => this.tick(), BEAT_MS);
  }

  /** The leader as the token names it (possibly this tab), if any. */
  holder(): { tabId: string; epoch: number } | undefined {
    const token = this.o.tokens.getItem(this.o.name);
    const match = token === null ? null : /^(\d+):(.+)$/.exec(token);
    return match ? { epoch: Number(match[1]), tabId: match[2]! } : undefined;
  }

  /** True while the token is this tab's (invariant 1). Steps down when it is not. */
  stillLeads(): boolean {
    if (!this.leading) return false;
    const h = this.holder();
    if (h?.tabId === this.o.tabId && h.epoch === this.epoch) return true;
    this.stepDown();
    return false;
  }

  /** A beat (or any message) from `tabId`: it is alive. */
  beat(tabId: string): void {
    this.heard.set(tabId, Date.now());
  }

  /** `tabId` said `bye`: it no longer leads. */
  left(tabId: string): void {
    this.heard.set(tabId, -Infinity);
    this.tick();
  }

  /** True when the tab the token names has been heard of within `DEAD_MS` (or is this tab). */
  alive(tabId: string, within = DEAD_MS): boolean {
    if (tabId === this.o.tabId) return this.leading;
    return Date.now() - (this.heard.get(tabId) ?? this.started) <= within;
  }

  /** Gives the lead up now (the page is being left): the token, then the lock. */
  resign(): void {
    if (this.leading && this.stillLeads()) this.o.tokens.removeItem(this.o.name);
    this.stepDown();
  }

  /** Stops: gives the token up if it is this tab's, and releases the lock. */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    if (this.leading && this.stillLeads()) this.o.tokens.removeItem(this.o.name);
    this.leading = false;
    this.releaseLock?.();
  }

  private queueForLock(): void {
    this.o.locks
      .request(
        this.o.name,
        () =>
          new Promise<void>((resolve) => {
            this.lockHeld = true;
            this.releaseLock = () => {
              this.lockHeld = false;
              this.releaseLock = undefined;
              resolve();
            };
            if (this.closed) this.releaseLock();
            else this.tick();
          }),
      )
      .catch(() => undefined);
  }

  private tick(): void {
    if (this.closed) return;
    const now = Date.now();
    if (now - this.lastTick > DEAD_MS) {
      // This tab was frozen itself: what it heard is old, and the beats that came meanwhile are
      // still queued. Judge nobody dead until it has listened again for DEAD_MS (invariant 4).
      this.started = now;
      this.heard.clear();
    }
    this.lastTick = now;
    if (this.leading) {
      this.stillLeads();
      return;
    }
    const h = this.holder();
    if (h && this.alive(h.tabId)) return;
    // Without the lock, only a leader gone for twice DEAD_MS (frozen: it keeps its lock).
    if (!this.lockHeld && (h === undefined || this.alive(h.tabId, 2 * DEAD_MS))) return;
    if (!this.lockHeld && Math.random() < 0.5) return; // jitter among the lockless
    this.epoch = Math.max(this.epoch, h?.epoch ?? 0) + 1;
    this.o.tokens.setItem(this.o.name, `${this.epoch}:${this.o.tabId}`);
    this.leading = true;
    this.o.onLead(this.epoch);
  }

  private stepDown(): void {
    if (!this.leading) return;
    this.leading = false;
    this.o.onStepDown();
    if (this.lockHeld && !this.closed) {
      this.releaseLock?.();
      this.queueForLock();
    }
  }
}
