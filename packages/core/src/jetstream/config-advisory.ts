/**
 * The stream-update advisory as `JetStreamLog.watchConfig` uses it (issue 10, case 5).
 *
 * nats-server publishes `$JS.EVENT.ADVISORY.STREAM.UPDATED.<stream>` in the stream's account
 * after every update of the stream's configuration (`sendUpdateAdvisoryLocked` in the server's
 * stream.go, from 2.2 on; 2.9.10 and 2.10.27 alike): a JSON `io.nats.jetstream.advisory.v1.
 * stream_action` event with `stream` and `action: "modify"`, without the configuration itself.
 * So a notice only says "check `info()`". One advisory per stream: in the shared layout every
 * state of the stream hears every update, which is right, since limits are the stream's.
 *
 * Invariants:
 * 1. Only well-formed advisories of this stream are passed on (the payload is validated: anyone
 *    allowed to publish on the subject could send anything).
 * 2. A denied subscription (a permissions violation, which nats.js reports to the callback and
 *    then closes the subscription) is reported once through `onUnavailable`, and the caller
 *    polls; so is a connection without core subscriptions.
 * 3. Nothing is delivered after `stop()`; the connection is never closed.
 */
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import type { LogConfigWatcher } from "../log.js";
import type { JetStreamAdapter } from "./adapter.js";
import { toStateSyncError } from "./nats-errors.js";

/** The subject of the stream-update advisory of `stream`. */
export function streamUpdatedSubject(stream: string): string {
  return `$JS.EVENT.ADVISORY.STREAM.UPDATED.${stream}`;
}

/** The parts of the advisory read (the server's `JSStreamActionAdvisory`). */
const advisorySchema = z.object({
  type: z.literal("io.nats.jetstream.advisory.v1.stream_action"),
  stream: z.string(),
  action: z.string(),
});

const decoder = new TextDecoder();

/** True when `data` is a stream-update advisory of `stream`. */
export function isStreamUpdateAdvisory(data: Uint8Array, stream: string): boolean {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    return false;
  }
  const parsed = advisorySchema.safeParse(json);
  return parsed.success && parsed.data.stream === stream && parsed.data.action === "modify";
}

/**
 * Subscribes to the stream-update advisory of `stream` once `connection` resolves (see the module
 * header); returns the stop function.
 */
export function watchStreamUpdates(
  connection: Promise<JetStreamAdapter>,
  stream: string,
  watcher: LogConfigWatcher,
): () => void {
  let stopped = false;
  let unavailable = false;
  let subscription: { unsubscribe(): void } | undefined;
  const fallBack = (error: unknown) => {
    if (stopped || unavailable) return;
    unavailable = true;
    watcher.onUnavailable(error);
  };
  const subject = streamUpdatedSubject(stream);
  connection.then(
    (nc) => {
      if (stopped) return;
      if (typeof nc.subscribe !== "function") {
        fallBack(new StateSyncError("UNAVAILABLE", "the connection has no core subscriptions"));
        return;
      }
      try {
        subscription = nc.subscribe(subject, {
          callback: (err, msg) => {
            if (stopped) return;
            if (err) fallBack(toStateSyncError(err, `subscribe to ${subject}`));
            else if (isStreamUpdateAdvisory(msg.data, stream)) watcher.onChange();
          },
        });
      } catch (err) {
        fallBack(toStateSyncError(err, `subscribe to ${subject}`));
      }
    },
    () => undefined, // no connection: nothing to watch; the caller polls after reconnecting
  );
  return () => {
    if (stopped) return;
    stopped = true;
    try {
      subscription?.unsubscribe();
    } catch {
      // the connection is closed already: the subscription went with it
    }
  };
}
