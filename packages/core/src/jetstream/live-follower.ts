/**
 * Which live follower a `JetStreamLog` runs (docs/fanout.md): the {@link FanoutFollower} when the
 * log was opened with `fanout` and the stream republishes this state's subject (and the
 * connection has core subscriptions), else the {@link JetStreamFollower} (one ordered consumer).
 * The choice needs the opened stream, so it is made once the stream is opened; until then, and
 * while opening fails with a passing error, it waits with jittered backoff. When the stream
 * stops republishing (an operator removed the rule), the fan-out follower ends and a consumer
 * follower goes on from the next revision.
 *
 * The fan-out follower (fanout-follower.ts, with its gap reads) is loaded on demand, when a log
 * opened with `fanout` starts following: an app that never uses fan-out does not load it
 * (README, "Bundle size"). Its load starts with the follower, beside the stream's opening. Should
 * it fail (a page that lost its network between loading and following), the consumer follower
 * goes on instead: entries keep arriving, through a consumer.
 */
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { LogFollowHandler, LogFollower } from "../log.js";
import type { FanoutDeps, FanoutSource } from "./fanout-follower.js";
import { FATAL, JetStreamFollower, type FollowSource } from "./follower.js";
import { toStateSyncError } from "./nats-errors.js";
import { backoffMs, interruptibleSleep, MSG_ID_HEADER } from "./util.js";

/** What the fan-out follower uses of this code (see `FanoutDeps`). */
const fanoutDeps: FanoutDeps = {
  StateSyncError,
  isStateSyncError,
  toStateSyncError,
  FATAL,
  backoffMs,
  interruptibleSleep,
  MSG_ID_HEADER,
};

type FanoutModule = typeof import("./fanout-follower.js");
let fanoutModule: Promise<FanoutModule> | undefined;

/** The fan-out follower's module, loaded once (a failed load is tried again next time). */
function loadFanout(): Promise<FanoutModule> {
  fanoutModule ??= import("./fanout-follower.js").catch((err: unknown) => {
    fanoutModule = undefined;
    throw err;
  });
  return fanoutModule;
}

/** How live entries reach a follower: republished (fan-out) or through a consumer. */
export type LiveVia = "republish" | "consumer";

/** Starts the live follower of `fanout` (or `consumer` when fan-out is off or unavailable). */
export class LiveFollower implements LogFollower {
  private inner: LogFollower | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  /** How this follower follows, once chosen. */
  via: LiveVia | undefined;

  constructor(
    private readonly consumer: FollowSource,
    private readonly fanout: FanoutSource | undefined,
    private readonly fromRevision: number,
    private readonly handler: LogFollowHandler,
  ) {
    if (!fanout) this.start("consumer");
    else void this.choose(fanout);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.inner?.stop();
  }

  private async choose(fanout: FanoutSource): Promise<void> {
    const loading = loadFanout();
    loading.catch(() => undefined); // awaited below once the stream is open
    for (let failures = 0; !this.stopped; failures++) {
      try {
        const s = await fanout.ready();
        if (this.stopped) return;
        if (s.liveSubject === undefined || !s.adapter.subscribe) return this.start("consumer");
        const module = await loading.catch(() => loadFanout()).catch(() => undefined);
        if (this.stopped) return;
        if (!module) return this.start("consumer");
        this.via = "republish";
        let next = this.fromRevision;
        this.inner = new module.FanoutFollower(
          fanout,
          s,
          this.fromRevision,
          {
            onEntry: (e) => {
              next = e.revision + 1;
              this.handler.onEntry(e);
            },
            ...(this.handler.revision ? { revision: () => this.handler.revision!() } : {}),
            onError: (error) => {
              // The stream stopped republishing (an operator removed the rule): go on with a
              // consumer from where the fan-out follower stopped.
              if (isStateSyncError(error, "UNAVAILABLE") && error.details.republishGone === true) {
                this.start("consumer", next);
              } else this.handler.onError?.(error);
            },
          },
          fanoutDeps,
        );
        return;
      } catch (err) {
        const error = toStateSyncError(err, `follow ${fanout.subject}`);
        if (error.code === "CLOSED" || this.stopped) return;
        if (error.code !== "UNAVAILABLE") return this.handler.onError?.(error);
        const sleep = interruptibleSleep(backoffMs(failures));
        this.wake = sleep.wake;
        await sleep.done;
        this.wake = undefined;
      }
    }
  }

  private start(via: LiveVia, from = this.fromRevision): void {
    if (this.stopped) return;
    this.via = via;
    this.inner = new JetStreamFollower(this.consumer, from, this.handler);
  }
}

/**
 * `VALIDATION` for fan-out options that cannot work; `given`: the user chose `prefix` (else it
 * is the default, and the message says so and how to choose another).
 */
export function checkLivePrefix(
  prefix: string,
  streamSubjects: readonly string[],
  given = true,
): void {
  const first = prefix.split(".")[0];
  if (streamSubjects.some((s) => s.split(".")[0] === first || s.startsWith(">"))) {
    throw new StateSyncError(
      "VALIDATION",
      given
        ? `fanout prefix ${prefix} overlaps the stream's subjects ${JSON.stringify(streamSubjects)} (a republish destination must not)`
        : `the default fanout prefix ${prefix} overlaps the stream's subjects ${JSON.stringify(streamSubjects)} (a republish destination must not); give another one in fanout: { prefix }`,
    );
  }
}
