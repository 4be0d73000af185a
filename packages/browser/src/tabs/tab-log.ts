import {
  StateSyncError,
  type AppendResult,
  type LogConfigWatcher,
  type LogConnectionStatus,
  type LogEntry,
  type LogFollowHandler,
  type LogFollower,
  type LogInfo,
  type RevisionedLog,
} from "@statesync/core";
import { PendingCalls } from "./calls.js";
import { EntryFeed } from "./feed.js";
import { LeadFailures } from "./lead-failures.js";
import { LeaderStates } from "./leader-states.js";
import { forwardLeadEntries } from "./lead-feed.js";
import { LeadNotices } from "./lead-notices.js";
import { Leadership } from "./leadership.js";
import { READ_PAGE } from "./op-schemas.js";
import { runOp } from "./run-op.js";
import { checkedOptions } from "../constructor-options.js";
import { tabLogOptionsSchema, type LeaderLog, type TabLogOptions } from "./tab-log-options.js";
import { TabStatus, type TabConnection } from "./tab-status.js";
import {
  BEAT_MS,
  errorFromWire,
  errorToWire,
  leadEnded,
  messageSchema,
  type TabMessage,
} from "./protocol.js";

export type { LeaderLog, TabLogOptions } from "./tab-log-options.js";

type AppendOptions = Parameters<RevisionedLog["appendConditional"]>[3];

/**
 * A {@link RevisionedLog} that tabs of one origin share (docs/offline.md, "Tabs"): each tab's
 * engine stays a full replica over it; only the transport changes. The leading tab (see
 * {@link Leadership}) holds the one NATS connection: its calls go to its own log, it answers the
 * other tabs' calls on a `BroadcastChannel`, and sends every entry its log delivers to them, so
 * they follow without a connection of their own. A follower's call goes to the leader; while the
 * tabs elect one, or it makes its first connection, it waits for that; when the leader has no
 * connection (it failed, or was lost) it fails at once with `UNAVAILABLE` (`notSent`), and the
 * engine waits and re-sends as with a server that is down (`LeaderStates`). Appends keep their
 * message ids, so a re-send through a new leader is deduplicated like any other
 * (jetstream-notes, "Lost acknowledgements").
 *
 * Fencing: a leader checks that it still holds the token right before every append it sends (its
 * own or a follower's); a leader that was frozen and thaws finds a newer epoch and steps down
 * without sending anything.
 *
 * The optional members of `RevisionedLog` pass through too (`identityPrefix` from the options,
 * `otherStateAt` as a call, `watchConfig` and `watchWarnings` as the leader's notices: see
 * `LeadNotices`); `tab-log-optional-node.test.ts` checks every one of them against a real
 * `JetStreamLog`, and fails for an optional member added to `RevisionedLog` but not here.
 */
export class TabLog implements RevisionedLog {
  readonly contiguous: boolean;
  /** Given by the options only: without, no own property (as a log without the member). */
  declare readonly identityPrefix?: string;
  readonly tabId: string;
  private readonly channel: BroadcastChannel;
  private readonly leadership: Leadership;
  private readonly feed: EntryFeed;
  private readonly calls: PendingCalls;
  /** The leading tabs' connections as this tab heard of them, and its calls through them. */
  private readonly leaders: LeaderStates;
  private readonly statusListeners = new Set<(s: LogConnectionStatus) => void>();
  private readonly state = new TabStatus(() => this.updateStatus());
  /** The leading tab's connection (its failed attempts, its first), told through the beats. */
  private readonly failures = new LeadFailures();
  /** The leader's configuration notices and warnings. */
  private readonly notices = new LeadNotices();
  private lead: { own: LeaderLog; stop: () => void } | undefined;
  private closed = false;
  private readonly timer: ReturnType<typeof setInterval>;

  /** Throws `VALIDATION` for options that are no {@link TabLogOptions} (strict). */
  constructor(private readonly o: TabLogOptions) {
    checkedOptions("TabLog", tabLogOptionsSchema, o);
    this.contiguous = o.contiguous;
    if (o.identityPrefix !== undefined) this.identityPrefix = o.identityPrefix;
    this.tabId = o.tabId ?? Math.random().toString(36).slice(2, 12);
    this.calls = new PendingCalls(this.tabId);
    this.leaders = new LeaderStates({
      tabId: this.tabId,
      calls: this.calls,
      closed: () => this.closed,
      leading: () => this.leading,
      runOwn: (op, args, signal) => this.lead && this.run(this.lead.own.log, op, args, signal),
      leader: () => this.aliveLeader(),
      post: (m) => this.post(m),
      heardOnline: () => this.updateStatus(),
    });
    this.channel = o.channel ?? new BroadcastChannel(o.name);
    this.feed = new EntryFeed(o.contiguous, (from, to) => this.read(from, to));
    this.channel.onmessage = (e: MessageEvent) => this.receive(e.data);
    this.leadership = new Leadership({
      name: o.name,
      tabId: this.tabId,
      locks: o.locks,
      tokens: o.tokens,
      onLead: (epoch) => this.startLeading(epoch),
      onStepDown: () => this.stopLeading(),
    });
    this.leadership.start();
    this.timer = setInterval(() => this.beat(), BEAT_MS);
    globalThis.addEventListener?.("pagehide", this.onPageHide);
  }

  /**
   * A page being left (a reload, a closed tab) gives the lead up at once, so the next tab need
   * not wait `DEAD_MS` for its beats to stop. A page kept in the back-forward cache comes back
   * as a follower.
   */
  private readonly onPageHide = () => this.giveUpLead();

  /** Gives the lead up at once (if this tab leads), telling the other tabs. */
  private giveUpLead(): void {
    if (!this.leading) return;
    const epoch = this.leadership.epoch;
    this.leadership.resign();
    this.post({ t: "bye", from: this.tabId, epoch });
  }

  /** True while this tab leads (holds the connection). */
  get leading(): boolean {
    return this.lead !== undefined;
  }

  /** True while another tab leads and is alive (this tab reaches the log through it). */
  get followsAnother(): boolean {
    return !this.lead && this.aliveLeader() !== undefined;
  }

  /** The tab the token names, while it is alive and not this one. */
  private aliveLeader(): string | undefined {
    const h = this.leadership.holder();
    return h && h.tabId !== this.tabId && this.leadership.alive(h.tabId) ? h.tabId : undefined;
  }

  get status(): LogConnectionStatus {
    return this.state.status;
  }

  /** Leading: a connection attempt failed (a refused WebSocket): see `lead-failures.ts`. */
  noteLeadFailure(error: StateSyncError): void {
    if (!this.lead || this.lead.own.log.status === "online") return;
    this.failures.note(error);
    this.beat();
  }

  /** Following: `listener` hears once per outage that the leading tab cannot connect. */
  watchLeadFailures(listener: (error: StateSyncError) => void): () => void {
    return this.failures.watch(listener);
  }

  watchStatus(listener: (status: LogConnectionStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => void this.statusListeners.delete(listener);
  }

  /** See `RevisionedLog.watchConfig`: the leading tab's log's notices (`LeadNotices`). */
  watchConfig(watcher: LogConfigWatcher): () => void {
    return this.notices.watchConfig(watcher);
  }

  /** See `RevisionedLog.watchWarnings`: the leading tab's log's warnings (`LeadNotices`). */
  watchWarnings(listener: (warning: StateSyncError) => void): () => void {
    return this.notices.watchWarnings(listener);
  }

  info(): Promise<LogInfo> {
    return this.leaders.call("info", []) as Promise<LogInfo>;
  }

  appendConditional(
    data: Uint8Array,
    expectedRevision: number,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult> {
    return this.append([data, expectedRevision, messageId], options);
  }

  appendUnconditional(
    data: Uint8Array,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult> {
    return this.append([data, null, messageId], options);
  }

  async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    if (this.lead) {
      try {
        yield* this.lead.own.log.read(fromRevision, toRevision);
      } catch (e) {
        throw leadEnded(e);
      }
      return;
    }
    let from = fromRevision;
    while (from <= toRevision) {
      const page = (await this.leaders.call("read", [from, toRevision])) as LogEntry[];
      yield* page;
      if (page.length < READ_PAGE) return;
      from = page[page.length - 1]!.revision + 1;
    }
  }

  follow(fromRevision: number, handler: LogFollowHandler): LogFollower {
    return this.feed.follow(fromRevision, handler);
  }

  entryAt(revision: number): Promise<LogEntry | undefined> {
    return this.leaders.call("entryAt", [revision]) as Promise<LogEntry | undefined>;
  }

  /** See `RevisionedLog.otherStateAt`: asks the leading tab's log (`false` when it has none). */
  otherStateAt(revision: number): Promise<boolean> {
    return this.leaders.call("otherStateAt", [revision]) as Promise<boolean>;
  }

  findByMessageId(messageId: string, after: number, scan?: number): Promise<number | undefined> {
    return this.leaders.call("findByMessageId", [messageId, after, scan]) as Promise<
      number | undefined
    >;
  }

  truncateBefore(revision: number): Promise<void> {
    return this.leaders.call("truncateBefore", [revision]) as Promise<void>;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.state.stop();
    globalThis.removeEventListener?.("pagehide", this.onPageHide);
    const epoch = this.leadership.epoch;
    const wasLeading = this.leading;
    this.leadership.close();
    if (wasLeading) this.post({ t: "bye", from: this.tabId, epoch });
    await this.stopLeading();
    this.leaders.changed();
    this.calls.rejectAll(new StateSyncError("CLOSED", "the log was closed"));
    this.statusListeners.clear();
    this.channel.close();
  }

  private append(args: unknown[], options: AppendOptions | undefined): Promise<AppendResult> {
    const limit = (options?.timeoutMs ?? 5_000) + 1_000;
    return this.leaders.call(
      "append",
      [...args, options?.timeoutMs],
      limit,
      options?.signal,
    ) as Promise<AppendResult>;
  }

  /** Runs `op` on `log` (this tab's own, while it leads), for this tab or for another's call. */
  private run(log: RevisionedLog, op: string, a: unknown[], signal?: AbortSignal) {
    const stillLeads = () => this.leadership.stillLeads();
    return runOp(log, op, a, stillLeads, signal).catch((e: unknown) => {
      throw leadEnded(e);
    });
  }

  private post(message: TabMessage): void {
    try {
      this.channel.postMessage(message);
    } catch {
      // a closed channel: the tab is going away
    }
  }

  private receive(raw: unknown): void {
    if (this.closed) return;
    const parsed = messageSchema.safeParse(raw);
    if (!parsed.success) return; // not ours (another version of the app): ignored
    const m = parsed.data;
    switch (m.t) {
      case "beat":
        this.leadership.beat(m.from);
        this.leaders.heardBeat(m.from, m.online, m.connecting === true);
        if (!this.lead) {
          this.failures.heard(m.online, m.failed);
          this.notices.heardBeat(m.from, m);
        }
        if (this.lead && m.epoch > this.leadership.epoch) this.leadership.stillLeads();
        this.updateStatus();
        return;
      case "bye":
        this.leadership.left(m.from);
        this.updateStatus();
        this.calls.abandon(m.from);
        this.leaders.changed();
        return;
      case "entry":
        this.leadership.beat(m.from);
        if (!this.lead) this.feed.push(m.entry, m.prev);
        return;
      case "fail":
        if (!this.lead) this.feed.fail(errorFromWire(m.error));
        return;
      case "config":
        if (!this.lead) this.notices.changed();
        return;
      case "res":
        if (m.to === this.tabId)
          this.calls.settle(m.id, m.error && errorFromWire(m.error), m.value);
        return;
      case "req":
        if (m.to === this.tabId) void this.answer(m.id, m.from, m.op, m.args);
    }
  }

  private async answer(id: string, to: string, op: string, args: unknown[]): Promise<void> {
    if (!this.lead) return; // the caller times out and tries the next leader
    try {
      const value = await this.run(this.lead.own.log, op, args);
      this.post({ t: "res", id, to, value });
    } catch (e) {
      this.post({ t: "res", id, to, error: errorToWire(e) });
    }
  }

  private beat(): void {
    if (this.lead && this.leadership.stillLeads()) {
      this.postBeat(this.leadership.epoch);
    }
    this.updateStatus();
    this.calls.abandonUnless((tabId) => this.leadership.alive(tabId));
    this.leaders.changed(); // a leader may have been judged gone meanwhile
  }

  private startLeading(epoch: number): void {
    const own = this.o.leaderLog();
    // A connection of this tab's that ends for good (`closed`) ends this lead, not the tabs' log:
    // the next lead connects anew. Meanwhile the tabs say `offline`.
    const unwatch = own.log.watchStatus((status) => {
      if (status === "closed") this.giveUpLead();
      else {
        if (status === "online" && this.lead?.own === own) this.failures.online();
        this.updateStatus();
      }
    });
    const stopForwarding = forwardLeadEntries(own.log, this.feed, (m) =>
      this.post({ ...m, from: this.tabId }),
    );
    const stopNotices = this.notices.lead(own.log, () =>
      this.post({ t: "config", from: this.tabId }),
    );
    this.lead = {
      own,
      stop: () => {
        unwatch();
        stopForwarding();
        stopNotices();
      },
    };
    this.failures.led();
    this.postBeat(epoch);
    this.updateStatus();
    this.leaders.changed();
  }

  /** Leading: says this tab is alive, and how its connection is (`TabMessage`, `beat`). */
  private postBeat(epoch: number): void {
    const online = this.lead?.own.log.status === "online";
    const said = { online, ...this.failures.forBeat(online), ...this.notices.forBeat() };
    this.post({ t: "beat", from: this.tabId, epoch, ...said });
  }

  private async stopLeading(): Promise<void> {
    const lead = this.lead;
    if (!lead) return;
    this.lead = undefined;
    lead.stop();
    this.updateStatus();
    this.leaders.changed();
    await lead.own.close().catch(() => undefined);
  }

  private updateStatus(): void {
    if (this.closed) return;
    const next = this.state.next(this.connection());
    if (next !== undefined) for (const l of [...this.statusListeners]) l(next);
  }

  /** The connection as this tab sees it: its own lead's, or the leading tab's (`TabStatus`). */
  private connection(): TabConnection {
    if (this.lead?.own.log.status === "online") return "online";
    if (this.lead) return this.failures.connecting ? "handover" : "offline";
    const to = this.aliveLeader();
    return to === undefined ? "handover" : this.leaders.connectionOf(to);
  }
}
