import { StateSyncError } from "@statesync/core";
import { z } from "zod/v4";

const port = z.number().int().min(1).max(65_535);
const bytes = z.number().int().nonnegative();

/** `StartNatsServerOptions` (nats-server.ts), checked: unknown keys are refused by name. */
const optionsSchema = z
  .strictObject({
    bin: z.string().min(1).optional(),
    port: port.optional(),
    wsPort: port.optional(),
    jetstream: z
      .union(
        [
          z.literal(false),
          z.strictObject({
            maxMemoryStore: bytes.optional(),
            maxFileStore: bytes.optional(),
            domain: z
              .string()
              .regex(/^[A-Za-z0-9_-]{1,64}$/)
              .optional(),
          }),
        ],
        { error: "jetstream must be false or { maxMemoryStore?, maxFileStore?, domain? }" },
      )
      .optional(),
    extraConfig: z
      .union([z.string(), z.custom<() => string>((v) => typeof v === "function")], {
        error:
          "extraConfig must be a string of nats-server configuration, or a function returning one",
      })
      .optional(),
    serverName: z.string().min(1).max(256).optional(),
    keepStore: z.boolean().optional(),
    startTimeoutMs: z.number().int().positive().optional(),
  })
  .optional();

/**
 * Checks `startNatsServer`'s options before anything starts: `VALIDATION` naming what is wrong
 * (before, a trial: `{ port: "x" }` went into the config file and the server's refusal came
 * back as a plain Error, "nats-server exited before it was ready").
 */
export function checkStartOptions(options: unknown): void {
  const parsed = optionsSchema.safeParse(options);
  if (parsed.success) return;
  throw new StateSyncError(
    "VALIDATION",
    `invalid startNatsServer options: ${z.prettifyError(parsed.error)}`,
    { cause: parsed.error },
  );
}
