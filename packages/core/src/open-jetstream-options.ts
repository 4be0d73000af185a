/**
 * The options of `openJetStreamSynchronizer` as one zod schema, so that the function a user
 * called checks every option before anything is built: a wrong option is refused once, as
 * `invalid <that function> options: ...`, with the option's path as the user wrote it, whichever
 * layer takes it (`createSynchronizer`, `JetStreamLog`). Before, one `openSynchronizer` call
 * reported "invalid openSynchronizer options", "invalid synchronizer options" or "invalid
 * JetStreamLog options" depending on the layer that checked. The runtime packages extend this
 * schema with their own options; the layers below still check (with their own names) for their
 * direct users.
 */
import { z } from "zod/v4";
import type { StateSyncError } from "./errors.js";
import { optionsSchema, validation } from "./engine/options.js";
import { isJetStreamAdapter, isNatsV2Connection, isNatsV3Connection } from "./jetstream/adapter.js";
import { jetStreamLogOptionsSchema } from "./jetstream/jetstream-log-options.js";
import { connectOptionsSchema } from "./nats-connect-options.js";
import { isSnapshotStoreLike } from "./snapshot-store.js";

/**
 * Whether `value` can be a `JetStreamLog`'s connection: a nats.js v2 or v3 connection, a
 * `JetStreamAdapter`, or a promise (what it resolves to is checked then).
 */
export function isConnectionLike(value: unknown): boolean {
  return (
    isNatsV2Connection(value) ||
    isNatsV3Connection(value) ||
    isJetStreamAdapter(value) ||
    (typeof value === "object" &&
      value !== null &&
      typeof (value as { then?: unknown }).then === "function")
  );
}

/**
 * zod schema of `openJetStreamSynchronizer`'s options: `createSynchronizer`'s but those it
 * fills itself (`log`, `ownsLog`, `onClose`), `JetStreamLog`'s location and connection options,
 * and `closeConnection`. Strict: an unknown key is refused, naming it.
 */
export const openJetStreamOptionsSchema = optionsSchema
  .omit({ log: true, ownsLog: true, onClose: true })
  .extend({
    ...jetStreamLogOptionsSchema.pick({
      whyNotConnected: true,
      stream: true,
      key: true,
      subjectPrefix: true,
      create: true,
      replicas: true,
      requestTimeoutMs: true,
      domain: true,
      fanout: true,
    }).shape,
    connection: z.custom<unknown>(
      isConnectionLike,
      "connection must be a nats.js connection (nats, nats.ws, @nats-io/transport-node, " +
        "@nats-io/nats-core wsconnect), a JetStreamAdapter, or a promise of one",
    ),
    closeConnection: z
      .custom<unknown>((v) => typeof v === "function", "closeConnection must be a function")
      .optional(),
  });

/**
 * zod schema of the optional `jetstream` option (`@nats-io/jetstream`'s module, or `{ jetstream,
 * jetstreamManager }`) of `JetStreamLog` and the runtime packages' `openSynchronizer`.
 */
export const jetStreamModuleSchema = jetStreamLogOptionsSchema.shape.jetstream;

/** The options a runtime package's `openSynchronizer` takes in place of core's connection. */
type RuntimeConnectionShape = { servers: z.ZodType; connection: z.ZodType };

/**
 * zod schema of a runtime package's `openSynchronizer` options: {@link openJetStreamOptionsSchema}
 * without what the runtime fills itself (`connection`, `closeConnection`, `snapshots`,
 * `pending`), extended with the runtime's own options (`own`: its `servers` and `connection`,
 * its snapshots and offline queue, ...) and with what both take alike (`jetstream`, and
 * `connectOptions` with each number nats.js would act on badly refused, and a typo: see
 * nats-connect-options.ts), in the order `servers`, `connection`, `jetstream`,
 * `connectOptions`, then the rest of `own`; refusing what both runtimes refuse: both or neither
 * of `servers` and `connection`, and `connectOptions` beside a given connection. Strict: an
 * unknown key is refused.
 */
export function runtimeOpenOptionsSchema<Own extends RuntimeConnectionShape>(own: Own) {
  type Connecting = { servers?: unknown; connection?: unknown; connectOptions?: unknown };
  const { servers, connection, ...rest } = own;
  return openJetStreamOptionsSchema
    .omit({ connection: true, closeConnection: true, snapshots: true, pending: true })
    .extend({
      servers,
      connection,
      jetstream: jetStreamModuleSchema,
      connectOptions: connectOptionsSchema.optional(),
      ...rest,
    })
    .refine((o: Connecting) => (o.servers === undefined) !== (o.connection === undefined), {
      message: "give exactly one of servers and connection",
    })
    .refine((o: Connecting) => o.connection === undefined || o.connectOptions === undefined, {
      message:
        "connectOptions apply to the connection made from `servers`, not to a given connection",
    });
}

/**
 * zod schema of a runtime package's `snapshots` option: a `SnapshotStore`, or `false` for none;
 * left out, the runtime's default store, which `defaultStore` names in the refusal.
 */
export function snapshotsOptionSchema(defaultStore: string) {
  return z
    .union([z.literal(false), z.custom<unknown>(isSnapshotStoreLike)], {
      // `snapshots: true` is what a new user wrote for "on", which is the default; `{}` was a raw
      // TypeError at the browser's first load, and `null` read as "none".
      error: `snapshots must be a SnapshotStore, or false for none; leave it out for ${defaultStore}`,
    })
    .optional();
}

/**
 * `VALIDATION` "invalid `<caller>` options: ..." with zod's account of each problem (its path as
 * the user wrote it) and the `ZodError` as `cause`: what `caller` (the function the user called)
 * throws for options its schema refuses.
 */
export function optionsRefused(caller: string, error: z.ZodError): StateSyncError {
  return validation(`invalid ${caller} options`, error);
}
