import { StateSyncError } from "@statesync/core";
import { afterFreeTime } from "../free-time-wait.js";

interface Call {
  /** The tab asked. */
  readonly to: string;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * A follower tab's calls waiting for the leader's answer (the `req` / `res` half of the tabs'
 * protocol, docs/offline.md "Tabs"): each has an id, a time limit and an abort signal, and fails
 * `UNAVAILABLE` when the leader does not answer in time, was not waited for, or went away
 * (outcome unknown: the engine re-sends an append with the same message id through the next
 * leader).
 */
export class PendingCalls {
  private readonly calls = new Map<string, Call>();
  private counter = 0;

  constructor(private readonly tabId: string) {}

  /**
   * Sends a call with `send(id)` to the tab `to` and waits at most `timeoutMs` for its answer
   * (see {@link settle}). A `signal` aborted already: nothing is sent (`UNAVAILABLE`, `notSent`,
   * `aborted`), as the `RevisionedLog` contract wants of an append.
   */
  start(
    to: string,
    send: (id: string) => void,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    if (signal?.aborted) {
      const why = "the call was not sent: it was aborted before";
      return Promise.reject(
        new StateSyncError("UNAVAILABLE", why, { details: { notSent: true, aborted: true } }),
      );
    }
    const id = `${this.tabId}-${++this.counter}`;
    return new Promise((resolve, reject) => {
      const done = () => {
        cancelWait();
        signal?.removeEventListener("abort", abort);
        this.calls.delete(id);
      };
      const fail = (why: string) => {
        done();
        reject(
          new StateSyncError("UNAVAILABLE", `the leading tab ${why}`, {
            details: { aborted: signal?.aborted },
          }),
        );
      };
      // Counted in this tab's free time (`afterFreeTime`): an answer that arrived while this
      // tab's own long task ran (re-applying a queue) is not late, whichever task runs first.
      const cancelWait = afterFreeTime(timeoutMs, () =>
        fail(`did not answer within ${timeoutMs} ms`),
      );
      const abort = () => fail("was not waited for (aborted)");
      signal?.addEventListener("abort", abort);
      this.calls.set(id, {
        to,
        resolve: (v) => (done(), resolve(v)),
        reject: (e) => (done(), reject(e)),
      });
      send(id);
    });
  }

  /** The answer to call `id` (ignored when it is not waited for any more). */
  settle(id: string, error: StateSyncError | undefined, value: unknown): void {
    const call = this.calls.get(id);
    if (error) call?.reject(error);
    else call?.resolve(value);
  }

  /**
   * Fails the calls waiting for `tabId`, which stopped leading (`UNAVAILABLE`, outcome unknown;
   * `details.leaderGone`, so that the `TabLog` may send a call that writes nothing again).
   */
  abandon(tabId: string): void {
    for (const call of [...this.calls.values()]) {
      if (call.to === tabId) {
        call.reject(
          new StateSyncError("UNAVAILABLE", "the leading tab went away before it answered", {
            details: { leaderGone: true },
          }),
        );
      }
    }
  }

  /** Fails the calls waiting for a tab that is not `alive` any more (see {@link abandon}). */
  abandonUnless(alive: (tabId: string) => boolean): void {
    for (const call of [...this.calls.values()]) if (!alive(call.to)) this.abandon(call.to);
  }

  /** Fails every call with `error` (the log was closed). */
  rejectAll(error: StateSyncError): void {
    for (const call of [...this.calls.values()]) call.reject(error);
    this.calls.clear();
  }
}
