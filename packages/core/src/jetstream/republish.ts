/**
 * The stream's RePublish rule as the fan-out follower uses it (docs/fanout.md): the rule a stream
 * created for fan-out gets, the core subject one state's entries are republished on, and
 * enabling the rule on an existing stream.
 *
 * Facts (scripts/probe-fanout.mjs, docs/fanout.md): every stored message on `src` is sent again
 * on `dest`, at most once, after it is stored, with `Nats-Stream`, `Nats-Subject`,
 * `Nats-Sequence`, `Nats-Last-Sequence` (the previous sequence on the same subject, 0 for the
 * first, in both layouts) and the message's own headers (`Nats-Msg-Id`). nats-server 2.9.10
 * refuses to add the rule to an existing stream (10052); 2.10 accepts it.
 */
import { StateSyncError } from "../errors.js";
import type { JetStreamApi } from "./adapter.js";
import type { JetStreamLayout } from "./layout.js";
import { apiErrorCode, toStateSyncError } from "./nats-errors.js";
import type { RePublishLike, StreamInfoLike } from "./nats-types.js";

/** Default first tokens of the republish destination: `statesync.live.<stream subject>`. */
export const DEFAULT_LIVE_PREFIX = "statesync.live";

/** The rule a stream created for fan-out gets: its subjects, under `prefix`. */
export function republishRule(layout: JetStreamLayout, prefix: string): RePublishLike {
  const src = layout.streamSubjects[0]!;
  return { src, dest: `${prefix}.${src}` };
}

/**
 * The core subject the entries on `subject` are republished on under `rule`, or undefined when
 * the rule does not cover the subject, sends headers only, or maps it in a way not understood
 * here. Wildcards of `src` map in order onto `*`/`>`/`{{wildcard(n)}}` of `dest` (NATS subject
 * mapping).
 */
export function liveSubjectOf(
  rule: RePublishLike | undefined,
  subject: string,
): string | undefined {
  if (!rule || rule.headers_only) return undefined;
  const src = (rule.src ?? ">").split(".");
  const s = subject.split(".");
  const captures: string[] = [];
  let tail: string | undefined;
  for (let i = 0; i < src.length; i++) {
    const t = src[i]!;
    if (t === ">") {
      if (s.length <= i) return undefined;
      tail = s.slice(i).join(".");
      captures.push(tail);
      break;
    }
    if (i >= s.length) return undefined;
    if (t === "*") captures.push(s[i]!);
    else if (t !== s[i]) return undefined;
    if (i === src.length - 1 && s.length !== src.length) return undefined;
  }
  let next = 0;
  const out: string[] = [];
  for (const t of rule.dest.split(".")) {
    const explicit = /^\{\{\s*wildcard\((\d+)\)\s*\}\}$/.exec(t);
    if (explicit) {
      const c = captures[Number(explicit[1]) - 1];
      if (c === undefined) return undefined;
      out.push(c);
    } else if (t === "*") {
      const c = captures[next++];
      if (c === undefined) return undefined;
      out.push(c);
    } else if (t === ">") {
      if (tail === undefined) return undefined;
      out.push(tail);
    } else {
      out.push(t);
    }
  }
  return out.join(".");
}

/**
 * Adds {@link republishRule} (and `allow_direct`) to an existing stream that has no republish
 * rule, with a stream update. Answers the stream info after the update, or the info as it was
 * when the stream already has a rule. Throws `STREAM_CONFIG` when the server refuses the change
 * (nats-server 2.9.10: 10052 "can not change RePublish"), `PERMISSION_DENIED`, `UNAVAILABLE`.
 */
export async function enableRepublish(
  api: JetStreamApi,
  info: StreamInfoLike,
  layout: JetStreamLayout,
  prefix: string,
): Promise<StreamInfoLike> {
  if (info.config.republish) return info;
  if (!api.streams.update) {
    throw new StateSyncError("STREAM_CONFIG", "this client cannot update streams");
  }
  try {
    return await api.streams.update(layout.stream, {
      ...info.config,
      republish: republishRule(layout, prefix),
      allow_direct: true,
    });
  } catch (err) {
    const error = toStateSyncError(err, `enable republish on ${layout.stream}`);
    // An API error is the server's refusal (10052 on 2.9.10); anything else did not reach it.
    if (apiErrorCode(err) === undefined || error.code === "PERMISSION_DENIED") throw error;
    throw new StateSyncError(
      "STREAM_CONFIG",
      `stream ${layout.stream}: the server refused to add a republish rule (${error.message})`,
      { cause: err, details: { stream: layout.stream } },
    );
  }
}
