/**
 * zod schemas of the options of the browser package's public classes, and the check their
 * constructors run first. Strict, as every statesync option: an unknown key is refused, naming
 * it; so is `null` or a value that is no object. Before, `new IndexedDbSnapshotStore(7)` and
 * `new IndexedDbPendingStore({ databseName: "x" })` were taken in silence (a new user's trial),
 * with the default database.
 */
import { optionsRefused } from "@statesync/core";
import { z } from "zod/v4";
import { MAX_TIMEOUT_MS } from "./idb-transaction.js";
import { fnSchema, notAnObject } from "./option-words.js";

const databaseName = z.string().min(1, "databaseName must be a non-empty string").optional();

/** zod schema of `IndexedDbSnapshotStore`'s options (`IndexedDbSnapshotStoreOptions`). */
export const snapshotStoreOptionsSchema = z
  .strictObject(
    {
      databaseName,
      onWarning: fnSchema.optional(),
      // Above 2^31 - 1 setTimeout fires at once: every open would time out.
      blockedTimeoutMs: z
        .number()
        .min(0)
        .max(MAX_TIMEOUT_MS, `blockedTimeoutMs must be a number from 0 to ${MAX_TIMEOUT_MS}`)
        .optional(),
      reopen: z
        .strictObject({
          attempts: z.number().int().min(1).optional(),
          baseMs: z.number().min(0).max(MAX_TIMEOUT_MS).optional(),
          capMs: z.number().min(0).max(MAX_TIMEOUT_MS).optional(),
        })
        .refine((r) => (r.capMs ?? 2_000) >= (r.baseMs ?? 50), {
          message: "reopen.capMs must be at least reopen.baseMs (default 50)",
          path: ["capMs"],
        })
        .optional(),
    },
    { error: notAnObject("{ databaseName?, onWarning?, blockedTimeoutMs?, reopen? }") },
  )
  .optional();

/** zod schema of `IndexedDbPendingStore`'s options (`IndexedDbPendingStoreOptions`). */
export const pendingStoreOptionsSchema = z
  .strictObject(
    { databaseName, onWarning: fnSchema.optional() },
    { error: notAnObject("{ databaseName?, onWarning? }") },
  )
  .optional();

/**
 * `value` as `schema` reads it, or `VALIDATION` "invalid `<caller>` options: ..." naming each
 * option as written (core's `optionsRefused`).
 */
export function checkedOptions<T>(caller: string, schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw optionsRefused(caller, parsed.error);
  return parsed.data;
}
