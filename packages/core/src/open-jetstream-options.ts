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
type RuntimeConnectionShape = {
  servers: z.ZodType;
  connection: z.ZodType;
  connectOptions: z.ZodType;
};

/**
 * zod schema of a runtime package's `openSynchronizer` options: {@link openJetStreamOptionsSchema}
 * without what the runtime fills itself (`connection`, `closeConnection`, `snapshots`,
 * `pending`), extended with the runtime's own options (`own`, in the order given: `servers`,
 * `connection`, `connectOptions`, its snapshots and offline queue, ...), and refusing what both
 * runtimes refuse: both or neither of `servers` and `connection`, and `connectOptions` beside a
 * given connection. Strict: an unknown key is refused.
 */
export function runtimeOpenOptionsSchema<Own extends RuntimeConnectionShape>(own: Own) {
  type Connecting = { servers?: unknown; connection?: unknown; connectOptions?: unknown };
  return openJetStreamOptionsSchema
    .omit({ connection: true, closeConnection: true, snapshots: true, pending: true })
    .extend(own)
    .refine((o: Connecting) => (o.servers === undefined) !== (o.connection === undefined), {
      message: "give exactly one of servers and connection",
    })
    .refine((o: Connecting) => o.connection === undefined || o.connectOptions === undefined, {
      message:
        "connectOptions apply to the connection made from `servers`, not to a given connection",
    });
}

/**
 * `VALIDATION` "invalid `<caller>` options: ..." with zod's account of each problem (its path as
 * the user wrote it) and the `ZodError` as `cause`: what `caller` (the function the user called)
 * throws for options its schema refuses.
 */
export function optionsRefused(caller: string, error: z.ZodError): StateSyncError {
  return validation(`invalid ${caller} options`, error);
}
