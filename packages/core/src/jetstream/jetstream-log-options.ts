/**
 * The options of {@link JetStreamLog} and their zod schema (checked at construction; a bad
 * option is `VALIDATION`).
 */
import { z } from "zod/v4";
import type { StateSyncError } from "../errors.js";
import { fanoutSchema, type FanoutOptions } from "./fanout-options.js";
import type { NatsConnectionLike } from "./nats-types.js";
import type { JetStreamV3Module } from "./nats-v3-types.js";
import type { PointReadMode } from "./point-reads.js";

/** Options of {@link JetStreamLog}. */
export interface JetStreamLogOptions {
  /**
   * A connection of either nats.js line, or a promise of one while the server is not reachable
   * yet (the log is `offline` until it resolves and each call waits for it at most
   * `requestTimeoutMs`). The log never closes it. Accepted: a v2 connection (`nats` over TCP,
   * `nats.ws`); a v3 connection (`connect` of `@nats-io/transport-node`, `wsconnect` of
   * `@nats-io/nats-core`) together with {@link JetStreamLogOptions.jetstream}; or a
   * `JetStreamAdapter` (`natsV3Adapter(nc, { jetstream, jetstreamManager })`).
   */
  connection: NatsConnectionLike | Promise<NatsConnectionLike>;
  /**
   * Why a pending `connection` is not made yet, for the error of a call that gave up waiting
   * for it (`UNAVAILABLE` "not connected to NATS within N ms: <why>", the why as `cause`): the
   * `whyNotConnected` of a background connection (`keepConnecting`, the runtime packages'
   * `connectInBackground`). Without it such an error says only how long it waited.
   */
  whyNotConnected?: () => StateSyncError | undefined;
  /**
   * `@nats-io/jetstream`'s `jetstream` and `jetstreamManager` functions (the module itself:
   * `await import("@nats-io/jetstream")`, or `{ jetstream, jetstreamManager }` imported from it),
   * needed with a nats.js v3 connection (v3 has no `nc.jetstream()`), ignored otherwise. Core
   * never imports a client line itself. Without it a v3 connection is refused with `VALIDATION`
   * (at construction, or at the first call when `connection` is a promise).
   */
  jetstream?: JetStreamV3Module;
  /** JetStream stream name (1-255 characters; no whitespace, `.`, `*`, `>`, `/`, `\`). */
  stream: string;
  /**
   * Selects the shared layout: many states in `stream`, this one on subject `<prefix>.<key>`.
   * One or more dot-separated tokens of `[A-Za-z0-9_-]`. Without it the state owns the stream.
   */
  key?: string;
  /**
   * First subject tokens; default the stream name. Own layout: `<prefix>.log`. Not starting with
   * `$` (NATS reserves those subjects): a stream whose name starts with `$` needs one.
   */
  subjectPrefix?: string;
  /** Create the stream when it does not exist (default true); false: it must exist. */
  create?: boolean;
  /**
   * Only read the log (default false): a sealed stream, which nothing can be written to, is
   * accepted (an archive read by `statesync history`, `verify`, `export`, ...), and every write
   * (`appendConditional`, `appendUnconditional`, `truncateBefore`) rejects `STREAM_CONFIG`
   * without a request.
   */
  readOnly?: boolean;
  /** Replicas of a stream this log creates (1-5, default 1). */
  replicas?: number;
  /** Timeout of each JetStream request and of the wait for a pending connection, ms (default 5000). */
  requestTimeoutMs?: number;
  /**
   * The JetStream domain that holds the stream (nats.js's `domain` option: API requests go to
   * `$JS.<domain>.API.>`). Needed by clients of a leaf node without JetStream in front of a hub
   * whose `jetstream { domain }` is set: nats-server denies plain `$JS.API.>` across a leaf
   * connection (nats-server PR 2693). Default: the local JetStream. README "Beyond one server".
   */
  domain?: string;
  /**
   * How single entries are read (the latest, the first at or after a revision, one by revision):
   * `"direct"` with `STREAM.MSG.GET`, `"consumer"` through an ephemeral consumer filtered to this
   * state's subject, or `"auto"` (default): direct until the server denies `STREAM.MSG.GET`, then
   * consumers. A tenant of a shared stream must be denied `STREAM.MSG.GET` (it reads any subject);
   * see docs/permissions.md.
   */
  pointReads?: PointReadMode;
  /**
   * Fan-out (docs/fanout.md): live followers subscribe to the entries the stream republishes on
   * a core subject, instead of each creating a JetStream consumer; gaps are read from the log.
   * `true` for the defaults. A stream this log creates gets the republish rule; an existing
   * stream without one is followed with consumers, unless `enable` adds the rule (a stream
   * update, which nats-server 2.9 refuses: consumers then, said by {@link fanoutRefused} and a
   * warning, see {@link watchWarnings}).
   */
  fanout?: boolean | FanoutOptions;
}

export const jetStreamLogOptionsSchema = z.object({
  connection: z.custom<NatsConnectionLike | Promise<NatsConnectionLike>>(
    (v) => typeof v === "object" && v !== null,
    "connection must be a nats.js connection or a promise of one",
  ),
  jetstream: z
    .custom<JetStreamV3Module>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as JetStreamV3Module).jetstream === "function" &&
        typeof (v as JetStreamV3Module).jetstreamManager === "function",
      "jetstream must be @nats-io/jetstream's module or { jetstream, jetstreamManager }",
    )
    .optional(),
  whyNotConnected: z
    .custom<() => StateSyncError | undefined>((v) => typeof v === "function", "a function")
    .optional(),
  stream: z.string(),
  key: z.string().optional(),
  subjectPrefix: z.string().optional(),
  create: z.boolean().optional(),
  readOnly: z.boolean().optional(),
  replicas: z.number().int().min(1).max(5).optional(),
  requestTimeoutMs: z.number().int().min(1).max(600_000).optional(),
  domain: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, "domain must be one subject token of letters, digits, - and _")
    .optional(),
  pointReads: z.enum(["auto", "direct", "consumer"]).optional(),
  fanout: fanoutSchema.optional(),
});
