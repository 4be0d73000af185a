import {
  AppendConflictError,
  ERROR_CODES,
  StateSyncError,
  type LogEntry,
  type StateSyncErrorCode,
} from "@statesync/core";
import { z } from "zod/v4";

/**
 * The messages tabs of one origin exchange about one state, on one `BroadcastChannel`
 * (docs/offline.md, "Tabs"). Every message is checked with {@link messageSchema} when it
 * arrives: it crosses a boundary (another tab, perhaps of another version of the app).
 *
 * - `beat`: the leader says it is alive, every {@link BEAT_MS}, with its fencing `epoch`,
 *   whether its own log is `online` and, while it is not, why its last connection attempt
 *   failed (`failed`), so a follower says `offline` at once as the leader does, or that its
 *   first connection is still being made (`connecting`), so a follower's call waits for it;
 * - `req` / `res`: a follower's call of the log (`op`, `args`) and the leader's answer (each op's
 *   arguments and answer are checked too: `op-schemas.ts`);
 * - `entry`: an entry the leader's log delivered, with the revision of the one it delivered
 *   before (`prev`, absent for the first), so a follower sees a gap and reads it;
 * - `bye`: the leader stepped down (closed, or fenced by a newer epoch);
 * - `config`: the leader's log says its configuration may have changed
 *   (`RevisionedLog.watchConfig`); a beat's `unwatched` says why the leader's log sends no such
 *   notices, and its `warnings` are the ones the leader's log gave (`RevisionedLog.watchWarnings`).
 */
export type TabMessage = z.infer<typeof messageSchema>;

/** How often the leader beats, ms. */
export const BEAT_MS = 500;
/** A leader not heard of for this long is taken to be gone (closed, crashed or frozen), ms. */
export const DEAD_MS = 2_500;

/** Most warnings a beat carries (a log gives a few, each once). */
export const MAX_WARNINGS = 16;

const id = z.string().min(1).max(64);
const revision = z.number().int().nonnegative();
const bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, "must be bytes");

/** An entry as it travels between tabs. */
export const wireEntrySchema = z.object({
  revision: revision.min(1),
  data: bytes,
  messageId: z.string().optional(),
  /** `LogEntry.skipped`: a revision the log holds no entry at (every replica steps over it). */
  skipped: z.literal(true).optional(),
});

/** An error as it travels (see {@link errorToWire}). */
export const errorWireSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()),
});

export const messageSchema = z.discriminatedUnion("t", [
  z.object({
    t: z.literal("beat"),
    from: id,
    epoch: revision,
    online: z.boolean(),
    failed: z.string().max(2048).optional(),
    /**
     * The leader's log has not been online during this lead and none of its connection attempts
     * failed yet: its first connection is being made, and a follower's call waits for it
     * (`LeaderStates`) rather than failing at once. Absent: online, failed, or lost since (or a
     * leader of a version before it: its followers' calls fail at once, as they did).
     */
    connecting: z.literal(true).optional(),
    /** Why the leader's log sends no configuration notices (absent: it does). */
    unwatched: z.string().max(2048).optional(),
    /**
     * The leader posts `config` messages (`true` in every beat of this version). Absent: a
     * leader of a version before them, which posts none, so its followers poll.
     */
    configNotices: z.literal(true).optional(),
    /** The warnings the leader's log gave during this lead. */
    warnings: z.array(errorWireSchema).max(MAX_WARNINGS).optional(),
  }),
  z.object({ t: z.literal("bye"), from: id, epoch: revision }),
  z.object({
    t: z.literal("req"),
    id: id,
    from: id,
    to: id,
    /**
     * Any name, so that an op this version does not know (a tab of a newer version calls it) is
     * answered at once, `unsupportedOp` (`runOp`), not dropped: its caller would wait for its
     * call to time out. Each op's `args`: `op-schemas.ts`.
     */
    op: z.string().min(1).max(64),
    args: z.array(z.unknown()).max(8),
  }),
  z.object({
    t: z.literal("res"),
    id: id,
    to: id,
    value: z.unknown().optional(),
    error: errorWireSchema.optional(),
  }),
  z.object({
    t: z.literal("entry"),
    from: id,
    entry: wireEntrySchema,
    prev: revision.optional(),
  }),
  /** The leading tab's follow of its log failed for good: `lead-feed.ts`. */
  z.object({ t: z.literal("fail"), from: id, error: errorWireSchema }),
  z.object({ t: z.literal("config"), from: id }),
]);

/** An error as it travels in a `res` (a `StateSyncError`'s code, message and details). */
export function errorToWire(err: unknown): {
  code: string;
  message: string;
  details: Record<string, unknown>;
} {
  if (err instanceof StateSyncError) {
    return { code: err.code, message: err.message, details: { ...err.details } };
  }
  return { code: "UNAVAILABLE", message: String(err), details: {} };
}

/**
 * The error a `res` (or a `fail`, a beat's warning) carried, as a `StateSyncError` again
 * (`CONFLICT` as `AppendConflictError`). A code this version does not know (a tab of a newer one,
 * or anything posted on the channel) becomes `UNAVAILABLE` (`details.code`: the one carried):
 * a passing failure, whose call the engine may send again (an append with its message id).
 */
export function errorFromWire(e: {
  code: string;
  message: string;
  details: Record<string, unknown>;
}): StateSyncError {
  if (e.code === "CONFLICT") {
    const { expectedRevision, latestRevision } = e.details;
    return new AppendConflictError(
      typeof expectedRevision === "number" ? expectedRevision : 0,
      typeof latestRevision === "number" ? latestRevision : undefined,
    );
  }
  if (!(ERROR_CODES as readonly string[]).includes(e.code)) {
    return new StateSyncError(
      "UNAVAILABLE",
      `the leading tab failed with ${e.code}: ${e.message}`,
      {
        details: { ...e.details, code: e.code },
      },
    );
  }
  return new StateSyncError(e.code as StateSyncErrorCode, e.message, { details: e.details });
}

/** A call that was never sent (`UNAVAILABLE`, `notSent`): the engine may send it again. */
export function notSent(why: string): StateSyncError {
  return new StateSyncError("UNAVAILABLE", why, { details: { notSent: true } });
}

/**
 * A leader's `CONNECTION_CLOSED` as the passing failure it is for the tabs: that connection's end
 * ends the lead, and the next lead connects anew (see `startLeading`). `UNAVAILABLE`, `notSent`
 * when nothing was sent (else the outcome of an append is unknown, and re-sent as usual).
 */
export function leadEnded(e: unknown): unknown {
  if (!(e instanceof StateSyncError) || e.code !== "CONNECTION_CLOSED") return e;
  return new StateSyncError("UNAVAILABLE", `the leading tab's connection ended: ${e.message}`, {
    cause: e,
    details: { notSent: e.details.notSent === true },
  });
}

/**
 * An entry as it is posted: its own copy of the bytes (a client's message may be a view of a
 * larger buffer, and a posted view copies the whole buffer), and its `skipped` flag (before, it
 * was lost on the way: a follower tab's replica got empty bytes and reported a `CORRUPT_ENTRY`,
 * "malformed entry", where the leading tab's reported `SKIPPED_SEQUENCE`).
 */
export function toWire(e: LogEntry): LogEntry {
  const wire = { revision: e.revision, data: e.data.slice(), messageId: e.messageId };
  return e.skipped ? { ...wire, skipped: true } : wire;
}
