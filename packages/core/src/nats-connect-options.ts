/**
 * The connect options of nats.js 2.x (`ConnectionOptions` of `nats` and `nats.ws`, one interface
 * in both) as zod schemas, for the runtime packages' `connectOptions` and `connectInBackground`.
 *
 * Why: nats.js checks none of its numbers, and acts on a wrong one without a word. A new user's
 * trial gave `connectOptions: { timeout: -1 }` (and `0`): every attempt then failed at once or
 * sooner than any server answers, so the replica stayed `offline` for good against a healthy
 * server, its error events reading "no server accepted a connection within -1 ms". What nats.js
 * 2.29 / nats.ws 1.30 do with each number (nats-base-client `protocol.js`, `heartbeats.js`,
 * `options.js`), and so what is refused:
 *
 * - `timeout` (ms one connection attempt may take; default 20 s): 0 is read as the default by
 *   nats.js but not by statesync's own dialling (Node's `serverSpeaks`), a negative one ends every
 *   attempt at once: an integer from 1 ms.
 * - `pingInterval` (ms between PINGs): 0 is nats.js's default (2 min, where statesync sets
 *   10 s), a negative one PINGs every millisecond and drops the connection as stale: from 1 ms.
 * - `maxPingOut` (unanswered PINGs before the connection is stale; default 2): 0 is the default
 *   again, a negative or fractional one is never reached, so a dead server is never noticed:
 *   an integer from 1.
 * - `maxReconnectAttempts` (per server; default 10): `-1` reconnects for ever, `0` never
 *   reconnects; anything below -1 acts as 0, a fraction as the next integer: an integer from -1.
 * - `reconnectTimeWait`, `reconnectJitter`, `reconnectJitterTLS` (ms between reconnect attempts
 *   to one server, and the random extra): a negative wait dials again at once, in a loop: an
 *   integer from 0.
 * - `port`: nats.js refuses it beside `servers`, which statesync always gives: refused, as
 *   `servers` is in `connectOptions`.
 *
 * Every time in ms is at most 2^31 - 1: a longer timer fires at once (`setTimeout`), so a huge
 * `timeout` failed every attempt and a huge `pingInterval` flooded the server. The other options
 * are checked for their type (nats.js reads `reconnect: "no"` as true). The schema is strict: an
 * unknown key (`pingIntervall`) is refused, naming it, as every statesync option is. `tls` is an
 * object (its keys are the runtime's: Node's `tls.connect` options) or `null`.
 */
import { z } from "zod/v4";
import { validation } from "./engine/options.js";

/** The longest delay a timer takes (`setTimeout`'s bound: a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const ms = (what: string, min: 0 | 1) =>
  z
    .number({ error: `${what} is a number of milliseconds` })
    .int(`${what} is a whole number of milliseconds`)
    .min(min, `${what} is at least ${min} ms`)
    .max(MAX_TIMER_MS, `${what} is at most ${MAX_TIMER_MS} ms (2^31 - 1, a timer's longest)`)
    .optional();
const count = (what: string, min: -1 | 1, note: string) =>
  z
    .number({ error: `${what} is a number` })
    .int(`${what} is a whole number`)
    .min(min, `${what} is at least ${min}${note}`)
    .optional();
const fn = z.custom<(...args: never[]) => unknown>(
  (v) => typeof v === "function",
  "expected a function",
);

/**
 * zod schema of nats.js 2.x's `ConnectionOptions` (with `servers`, and nats.ws's `wsFactory`):
 * every option typed, the numbers nats.js acts on badly refused (see the module comment).
 */
export const natsConnectOptionsSchema = z.strictObject({
  servers: z.union([z.string(), z.array(z.string())]).optional(),
  port: z.number().int().min(1).max(65_535).optional(),
  timeout: ms("timeout", 1),
  pingInterval: ms("pingInterval", 1),
  maxPingOut: count("maxPingOut", 1, " (unanswered PINGs before the connection is stale)"),
  maxReconnectAttempts: count(
    "maxReconnectAttempts",
    -1,
    " (-1: reconnect for ever; 0: never reconnect)",
  ),
  reconnectTimeWait: ms("reconnectTimeWait", 0),
  reconnectJitter: ms("reconnectJitter", 0),
  reconnectJitterTLS: ms("reconnectJitterTLS", 0),
  reconnectDelayHandler: fn.optional(),
  authenticator: z
    .union([fn, z.array(fn)], { error: "expected a function or an array of them" })
    .optional(),
  name: z.string().optional(),
  user: z.string().optional(),
  pass: z.string().optional(),
  token: z.string().optional(),
  inboxPrefix: z.string().optional(),
  tls: z
    .custom<object | null>(
      (v) => v === null || (typeof v === "object" && !Array.isArray(v)),
      "tls must be TLS options (an object, {} to require TLS) or null",
    )
    .optional(),
  debug: z.boolean().optional(),
  noEcho: z.boolean().optional(),
  noRandomize: z.boolean().optional(),
  pedantic: z.boolean().optional(),
  reconnect: z.boolean().optional(),
  verbose: z.boolean().optional(),
  waitOnFirstConnect: z.boolean().optional(),
  ignoreClusterUpdates: z.boolean().optional(),
  ignoreAuthErrorAbort: z.boolean().optional(),
  noAsyncTraces: z.boolean().optional(),
  resolve: z.boolean().optional(),
  /** nats.ws's socket factory (`WsConnectionOptions`). */
  wsFactory: fn.optional(),
});

const elsewhere = (message: string) => z.custom<never>(() => false, message).optional();

/**
 * zod schema of the runtime packages' `connectOptions` (nats.js's connect options but
 * `servers`): {@link natsConnectOptionsSchema} with `servers` and `port` refused, since the
 * servers are given as `openSynchronizer`'s `servers` (both were ignored in silence before: a
 * trial's connection opened on `servers`).
 */
export const connectOptionsSchema = natsConnectOptionsSchema.extend({
  servers: elsewhere("give the servers as openSynchronizer's `servers`, not in connectOptions"),
  port: elsewhere("give the server as openSynchronizer's `servers`, not a port in connectOptions"),
});

/** zod schema of `connectInBackground`'s `settings`. */
const connectSettingsSchema = z
  .strictObject({ silentMs: ms("silentMs", 1) }, { error: "settings must be { silentMs? }" })
  .optional();

/**
 * Throws `VALIDATION` "invalid connectInBackground options: ..." unless `options` are nats.js
 * connect options ({@link natsConnectOptionsSchema}), and "invalid connectInBackground settings"
 * unless `settings` is `{ silentMs? }`: what the runtime packages' `connectInBackground` checks
 * before its first attempt.
 */
export function checkConnectInBackground(options: unknown, settings: unknown): void {
  checkNatsConnectOptions("connectInBackground", options);
  const given = connectSettingsSchema.safeParse(settings);
  if (!given.success) throw validation("invalid connectInBackground settings", given.error);
}

/**
 * Throws `VALIDATION` "invalid `<caller>` options: ..." unless `options` are nats.js connect
 * options ({@link natsConnectOptionsSchema}); `caller` is the function the user called.
 */
export function checkNatsConnectOptions(caller: string, options: unknown): void {
  const parsed = natsConnectOptionsSchema.safeParse(options);
  if (!parsed.success) throw validation(`invalid ${caller} options`, parsed.error);
}
