import { StateSyncError } from "../errors.js";
import { subjectMatches, type JetStreamLayout } from "./layout.js";
import { apiErrorCode, JS_ERR, LASTING_CREATE_REFUSALS, toStateSyncError } from "./nats-errors.js";
import type { JetStreamApi } from "./adapter.js";
import type { RePublishLike, StreamConfigLike, StreamInfoLike } from "./nats-types.js";

/** Default duplicate window of a created stream: 2 minutes, in nanoseconds (the server default). */
export const DEFAULT_DUPLICATE_WINDOW_NS = 120_000_000_000;

/**
 * The configuration of a stream created for `layout` (jetstream-notes "Compaction primitives",
 * "Lost acknowledgements"): file storage, limits retention with no limit that drops history
 * (`max_age` 0, `max_msgs`/`max_bytes`/`max_msgs_per_subject` -1), `discard: old`, a 2 minute
 * duplicate window, `deny_delete: true` (a deleted message would punch a hole in a contiguous
 * log; truncation uses filtered purge, which stays allowed) and `allow_rollup_hdrs: false` (the
 * log never rolls up, and a rollup header would let any publisher wipe a subject's history).
 * With `republish` (fan-out, docs/fanout.md) it also gets that rule and `allow_direct: true`.
 */
export function createdStreamConfig(
  layout: JetStreamLayout,
  replicas: number,
  republish?: RePublishLike,
): StreamConfigLike & { name: string } {
  return {
    // Fan-out (docs/fanout.md): entries republished to live followers, direct get for gaps.
    ...(republish ? { republish, allow_direct: true } : {}),
    name: layout.stream,
    subjects: [...layout.streamSubjects],
    retention: "limits",
    storage: "file",
    max_age: 0,
    max_msgs: -1,
    max_bytes: -1,
    max_msgs_per_subject: -1,
    max_msg_size: -1,
    discard: "old",
    num_replicas: replicas,
    duplicate_window: DEFAULT_DUPLICATE_WINDOW_NS,
    allow_rollup_hdrs: false,
    deny_delete: true,
    deny_purge: false,
    description: layout.shared
      ? "statesync: many replicated states, one subject each"
      : "statesync: one replicated state",
  };
}

const positive = (n: number | undefined): boolean => typeof n === "number" && n > 0;

/** Room left in `max_payload` for the headers of a publish (message id, expected sequence). */
export const HEADER_ALLOWANCE_BYTES = 1024;

/**
 * The smallest entry limit a log is opened with, bytes (after {@link HEADER_ALLOWANCE_BYTES}):
 * below it a snapshot entry cannot carry much of its `recent` list, and a chunked snapshot's
 * parts would hold a few bytes of the state each (a fresh-eyes trial: a 15 KB state became
 * 15,600 parts of one character on a stream with `max_msg_size` 1,500).
 */
export const MIN_ENTRY_BYTES = 1024;

/**
 * Why the message size limits leave too little room for entries (a stream's `max_msg_size`, the
 * server's `max_payload`), or undefined when they leave {@link MIN_ENTRY_BYTES} or more.
 */
export function messageSizeProblem(
  maxMsgSize: number | undefined,
  maxPayload: number | undefined,
): string | undefined {
  const least = HEADER_ALLOWANCE_BYTES + MIN_ENTRY_BYTES;
  const why = `statesync keeps ${HEADER_ALLOWANCE_BYTES} bytes of each message for headers and needs at least ${least} bytes`;
  if (positive(maxMsgSize) && maxMsgSize! < least) {
    return `max_msg_size ${maxMsgSize} leaves too little room for entries (${why})`;
  }
  if (positive(maxPayload) && maxPayload! < least) {
    return `the server's max_payload ${maxPayload} leaves too little room for entries (${why})`;
  }
  return undefined;
}

/**
 * The reasons `config` is unsafe for `layout`, empty when it is fine: a retention other than
 * `limits`, a `max_age`/`max_msgs`/`max_bytes`/`max_msgs_per_subject` limit, memory storage (lost
 * on a server restart), a `max_msg_size` too small for entries ({@link messageSizeProblem}), a
 * mirror or sealed stream, a subject transform (2.10), subjects that do not capture the state's
 * subject, and for the own-stream layout any other subject or a source (every sequence of the
 * stream must belong to the state).
 */
export function streamConfigProblems(
  config: StreamConfigLike,
  layout: JetStreamLayout,
  { readOnly = false }: { readOnly?: boolean } = {},
): string[] {
  const problems: string[] = [];
  if (config.retention !== undefined && config.retention !== "limits") {
    problems.push(`retention "${config.retention}" deletes messages (need "limits")`);
  }
  for (const limit of ["max_age", "max_msgs", "max_bytes", "max_msgs_per_subject"] as const) {
    if (!positive(config[limit])) continue;
    // max_age is in nanoseconds on the wire: said in seconds too (fresh-eyes trial).
    const value =
      limit === "max_age" ? `${config[limit]} ns (${config[limit]! / 1e9} s)` : config[limit];
    problems.push(`${limit} ${value} drops history`);
  }
  if (config.storage === "memory") problems.push("memory storage loses history on restart");
  // A log only read needs no room to write.
  const size = readOnly ? undefined : messageSizeProblem(config.max_msg_size, undefined);
  if (size !== undefined) problems.push(size);
  if (config.mirror) problems.push("a mirror cannot be written");
  // Sealed: nothing is added or removed any more, so a log only read finds its history whole.
  if (config.sealed && !readOnly) problems.push("a sealed stream cannot be written");
  // 2.10: an entry appended on the state's subject would be stored under another one, where no
  // replica reads it (fresh-eyes trial: the log stuck for good, reported as safe).
  const transform = config.subject_transform;
  if (transform?.dest && transform.dest !== transform.src) {
    problems.push(`a subject transform stores messages under ${JSON.stringify(transform.dest)}`);
  }
  const subjects = config.subjects ?? [];
  // A key given for a stream a state owns, or left out for a shared one, is the likelier cause
  // than a stream set up wrong: said so (a new user read only "do not capture" / "not exactly").
  if (layout.shared) {
    if (!subjects.some((p) => subjectMatches(p, layout.subject))) {
      const own = `${layout.subject.slice(0, -(layout.key!.length + 1))}.log`;
      const hint =
        subjects.length === 1 && subjects[0] === own
          ? ` (the stream holds one state, on ${own}: open it without \`key\` (the CLI's \`--key\`))`
          : "";
      problems.push(`subjects ${JSON.stringify(subjects)} do not capture ${layout.subject}${hint}`);
    }
  } else {
    if (subjects.length !== 1 || subjects[0] !== layout.subject) {
      const shared = subjects.some(
        (p) => p !== layout.subject && subjectMatches(p, layout.subject),
      );
      problems.push(
        `subjects ${JSON.stringify(subjects)} are not exactly ["${layout.subject}"] (a state that owns a stream needs every sequence${shared ? "; a shared stream holds one state per key: give the state's key (option `key`, the CLI's `--key`)" : ""})`,
      );
    }
    if (config.sources && config.sources.length > 0) {
      problems.push("sources add foreign messages to a stream a state owns");
    }
  }
  return problems;
}

/**
 * What makes `config` unsafe although the log can use it, empty when nothing does: settings that
 * drop no history by themselves but let one request break the log for every new replica. Such a
 * stream is opened (refusing it would lock out logs that work), and the log warns once
 * ({@link configWarning}). Today one: `deny_delete` off. Deleting one message of the log
 * (`nats stream rmm`, anyone with the `STREAM.MSG.DELETE` API) leaves a gap before the tail that
 * no snapshot entry covers: replicas that read across it stop with `TRUNCATED`. The streams
 * statesync creates set `deny_delete: true` (and still allow the filtered purge compaction uses);
 * an existing stream can be updated to it (nats-server refuses to unset it: checked on 2.9.10 and
 * 2.10.27), so the warning cannot come up later under a live replica, only go away.
 */
export function streamConfigWarnings(config: StreamConfigLike): string[] {
  const warnings: string[] = [];
  if (config.deny_delete !== true) {
    warnings.push(
      "deny_delete is off: deleting one message leaves a gap that replicas reading across it stop at (TRUNCATED); turn it on (a stream update may set it, never unset it)",
    );
  }
  return warnings;
}

/**
 * The `STREAM_CONFIG` warning of a usable stream with {@link streamConfigWarnings} (`details`:
 * `stream`, `warnings`, `usable: true`), or undefined when there are none. A warning, not a
 * refusal: the log given to the replica's `"error"` listeners (`RevisionedLog.watchWarnings`).
 */
export function configWarning(
  config: StreamConfigLike,
  layout: JetStreamLayout,
): StateSyncError | undefined {
  const warnings = streamConfigWarnings(config);
  if (warnings.length === 0) return undefined;
  return new StateSyncError(
    "STREAM_CONFIG",
    `stream ${layout.stream} is usable but unsafe for statesync: ${warnings.join("; ")}`,
    { details: { stream: layout.stream, warnings, usable: true } },
  );
}

/** Throws `StateSyncError("STREAM_CONFIG")` listing {@link streamConfigProblems}, if any. */
export function assertStreamConfig(
  info: StreamInfoLike,
  layout: JetStreamLayout,
  options: { readOnly?: boolean } = {},
): void {
  const problems = streamConfigProblems(info.config, layout, options);
  if (problems.length > 0) {
    throw new StateSyncError(
      "STREAM_CONFIG",
      `stream ${layout.stream} is unsafe for statesync: ${problems.join("; ")}`,
      { details: { stream: layout.stream, problems } },
    );
  }
}

/**
 * Opens the stream of `layout`: reads its info and checks its configuration; when it does not
 * exist, creates it with {@link createdStreamConfig} (with `republish` when given) if `create`,
 * else throws `STREAM_CONFIG`.
 * Two clients creating it at once both succeed (an identical add is idempotent; a differing one,
 * 10058, re-reads and checks what the other created, and so does one that raced the other's
 * create into a "subjects overlap", 10065).
 *
 * Throws `STREAM_CONFIG`, `PERMISSION_DENIED`, `UNAVAILABLE`.
 */
export async function ensureStream(
  jsm: Pick<JetStreamApi, "streams">,
  layout: JetStreamLayout,
  create: boolean,
  replicas: number,
  republish?: RePublishLike,
  readOnly = false,
): Promise<StreamInfoLike> {
  let info: StreamInfoLike;
  try {
    info = await jsm.streams.info(layout.stream);
  } catch (err) {
    if (apiErrorCode(err) !== JS_ERR.STREAM_NOT_FOUND) {
      throw toStateSyncError(err, `stream info ${layout.stream}`);
    }
    if (!create) {
      throw new StateSyncError(
        "STREAM_CONFIG",
        `stream ${layout.stream} does not exist and creating it is not permitted (create: false)`,
        { cause: err, details: { stream: layout.stream } },
      );
    }
    try {
      info = await jsm.streams.add(createdStreamConfig(layout, replicas, republish));
    } catch (addErr) {
      if (apiErrorCode(addErr) === JS_ERR.REPLICAS_NOT_SUPPORTED) {
        // Lasting until the setup changes: not a server that is down (fresh-eyes trial: the
        // replica read `offline` and its updates failed much later with an unrelated reason).
        throw new StateSyncError(
          "STREAM_CONFIG",
          `cannot create stream ${layout.stream} with ${replicas} replicas: the server runs JetStream without a cluster, where a stream has 1 replica (use replicas: 1, or a JetStream cluster)`,
          { cause: addErr, details: { stream: layout.stream, replicas } },
        );
      }
      let errCode = apiErrorCode(addErr);
      // Two identical creates at once: nats-server checks the name, then (unlocked) the subjects,
      // so the later one may see the earlier one's subjects before its name and answer "subjects
      // overlap" (10065) instead of succeeding (seen under load: 3 replicas opening one new
      // stream). A stream of our name there now is the other create's: checked like 10058.
      if (errCode === JS_ERR.SUBJECT_OVERLAP && (await streamExists(jsm, layout))) {
        errCode = JS_ERR.STREAM_NAME_IN_USE;
      }
      if (errCode !== undefined && LASTING_CREATE_REFUSALS.has(errCode)) {
        const overlap =
          errCode === JS_ERR.SUBJECT_OVERLAP
            ? `: another stream already holds a subject of ${layout.streamSubjects.join(", ")} (choose another subject prefix: option subjectPrefix, --subject-prefix in the CLI; or open that stream)`
            : "";
        throw new StateSyncError(
          "STREAM_CONFIG",
          `${toStateSyncError(addErr, `create stream ${layout.stream}`).message}${overlap}`,
          { cause: addErr, details: { stream: layout.stream, errCode } },
        );
      }
      if (errCode !== JS_ERR.STREAM_NAME_IN_USE) {
        throw toStateSyncError(addErr, `create stream ${layout.stream}`);
      }
      try {
        info = await jsm.streams.info(layout.stream);
      } catch (again) {
        // The create said the stream exists: a "not found" now is a cluster node that does not
        // know it yet (seen on 2.10 with R3 streams, docs/servers.md), not a deletion. Retried.
        if (apiErrorCode(again) === JS_ERR.STREAM_NOT_FOUND) {
          throw new StateSyncError(
            "UNAVAILABLE",
            `stream info ${layout.stream}: stream not found right after its create answered that it exists; taken as not known to the answering server yet`,
            { cause: again, details: { notSent: true } },
          );
        }
        throw toStateSyncError(again, `stream info ${layout.stream}`);
      }
    }
  }
  assertStreamConfig(info, layout, { readOnly });
  return info;
}

/**
 * Whether the stream of `layout` exists now: false when the server says it does not and no
 * stream of that name holds its subjects (the overlap stands); throws what else its info fails
 * with (a timeout under the load the race comes with says nothing of an overlap: it was reported
 * as a lasting STREAM_CONFIG, which is not retried).
 *
 * On a cluster the server answering the info may not know yet a stream that another node just
 * created (10059 for a moment after the create, docs/servers.md): the list of streams by
 * subject (`find`) then names it, and the caller's info after this says `UNAVAILABLE`, retried.
 * A `find` that fails or is missing tells nothing: the overlap stands, as before.
 */
async function streamExists(
  jsm: Pick<JetStreamApi, "streams">,
  layout: JetStreamLayout,
): Promise<boolean> {
  try {
    await jsm.streams.info(layout.stream);
    return true;
  } catch (err) {
    if (apiErrorCode(err) !== JS_ERR.STREAM_NOT_FOUND) {
      throw toStateSyncError(err, `stream info ${layout.stream}`);
    }
  }
  const holder = await jsm.streams.find?.(layout.streamSubjects[0]!).catch(() => undefined);
  return holder === layout.stream;
}
