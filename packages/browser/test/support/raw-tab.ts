import { TabLog } from "../../src/tabs/tab-log.js";
import { FakeLocks, FakeStorage } from "./fake-tabs.js";

/** A `req` a tab posted on the channel, as a raw tab receives it. */
export interface RawRequest {
  id: string;
  from: string;
  op: string;
  args: unknown[];
}

/** A `res` posted on the channel, as a raw tab receives it. */
export interface RawAnswer {
  id: string;
  to: string;
  value?: unknown;
  error?: { code: string; message: string; details: Record<string, unknown> };
}

let names = 0;

/** A fresh origin's name for a test's tabs (one channel, lock and token per name). */
export function originName(prefix: string): string {
  return `${prefix}-${process.pid}-${++names}`;
}

/**
 * A tab that speaks the tabs' protocol by hand (another script of the origin, or a tab of another
 * version of the app): it posts anything on the channel `name` and records what arrives. As a
 * fake leader (`lead()`), it holds the lock and the token and beats, and answers every `req` sent
 * to it with `answer(req)` (a malformed answer, as a test chooses).
 */
export class RawTab {
  readonly locks = new FakeLocks();
  readonly tokens = new FakeStorage();
  readonly answers: RawAnswer[] = [];
  readonly requests: RawRequest[] = [];
  answer: (req: RawRequest) => unknown = () => undefined;
  private readonly channel: BroadcastChannel;
  private beating: ReturnType<typeof setInterval> | undefined;
  private releaseLock: (() => void) | undefined;

  constructor(
    readonly name: string,
    readonly tabId = "raw",
  ) {
    this.channel = new BroadcastChannel(name);
    this.channel.onmessage = (e: MessageEvent) => this.receive(e.data as Record<string, unknown>);
  }

  /** Posts `message` as is. */
  post(message: unknown): void {
    this.channel.postMessage(message);
  }

  /** Posts a `req` of `op` with `args` to the tab `to`; its id. */
  request(to: string, op: string, args: unknown[], id = `${this.tabId}-${Math.random()}`): string {
    this.post({ t: "req", id, from: this.tabId, to, op, args });
    return id;
  }

  /** Leads: takes the lock and the token (epoch 1) and beats, online, until `close()`. */
  lead(): void {
    void this.locks.request(this.name, () => new Promise<void>((r) => (this.releaseLock = r)));
    this.tokens.setItem(this.name, `1:${this.tabId}`);
    const beat = () => this.post({ t: "beat", from: this.tabId, epoch: 1, online: true });
    beat();
    this.beating = setInterval(beat, 200);
  }

  close(): void {
    clearInterval(this.beating);
    this.releaseLock?.();
    this.channel.close();
  }

  private receive(m: Record<string, unknown>): void {
    if (m.t === "res" && m.to === this.tabId) this.answers.push(m as unknown as RawAnswer);
    if (m.t !== "req" || m.to !== this.tabId) return;
    const req = m as unknown as RawRequest;
    this.requests.push(req);
    void Promise.resolve(this.answer(req)).then((value) =>
      this.post({ t: "res", id: req.id, to: req.from, value }),
    );
  }
}

/** Waits until `check()` holds (polls every 10 ms; "condition not reached" after `timeoutMs`). */
export async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A `TabLog` that follows `leader` (a raw tab that leads): it never leads itself. Resolves once it
 * follows and is online; the caller closes it.
 */
export async function followerOf(leader: RawTab): Promise<TabLog> {
  const log = new TabLog({
    name: leader.name,
    contiguous: true,
    locks: leader.locks,
    tokens: leader.tokens,
    leaderLog: () => {
      throw new Error("the follower never leads here");
    },
  });
  try {
    await until(() => log.followsAnother && log.status === "online");
  } catch (e) {
    await log.close();
    throw e;
  }
  return log;
}
