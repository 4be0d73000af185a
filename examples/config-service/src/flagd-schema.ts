import { z } from "zod";
import { flagdProblem } from "./flagd-validate.js";

/** Any JSON value (what variants and targeting rules hold). */
export const jsonSchema = z.json();
/** A JSON value. */
export type Json = z.infer<typeof jsonSchema>;
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/**
 * Names of the membership model's members: kept to a safe character set. (Flag keys and variant
 * names are not restricted this way: flagd accepts any non-empty single-line string.)
 */
export const nameSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.-]+$/, "letters, digits and _ . - only");

/** A flag key or variant name as flagd accepts it: a non-empty string without line breaks. */
export const flagdNameSchema = z
  .string()
  .min(1)
  .regex(/^.+$/u, "a non-empty name without line breaks");

/** The kind of a variant value; all variants of one flag share a kind (flagd's flag types). */
export type VariantKind = "boolean" | "string" | "number" | "object";

/** Kind of a variant value (arrays and null count as objects, which flagd rejects as variants). */
export function variantKind(value: Json): VariantKind {
  const kind = typeof value;
  return kind === "boolean" || kind === "string" || kind === "number" ? kind : "object";
}

/**
 * One flag of a flagd flag definition file (https://flagd.dev/reference/flag-definitions/):
 * its state, its variants, the variant served by default, and optional JsonLogic targeting.
 *
 * Deliberately looser than flagd (it must never refuse what flagd accepts): `defaultVariant` may
 * be missing or `null` (evaluation then falls back to the caller's default, reason `DEFAULT`),
 * names are any strings and unknown properties are kept. The document as a whole is checked by
 * flagd's own validator ({@link flagdConfigSchema}).
 */
export const flagSchema = z
  .object({
    state: z.enum(["ENABLED", "DISABLED"]),
    variants: z.record(z.string(), jsonSchema),
    defaultVariant: z.string().nullable().optional(),
    targeting: z.record(z.string(), jsonSchema).optional(),
    metadata: z.record(z.string(), jsonSchema).optional(),
  })
  .loose();

/** A flag. */
export type Flag = z.infer<typeof flagSchema>;

/**
 * A whole flagd flag definition file: the shared state of the `feature-flags` model. The zod
 * shape only types it; acceptance is decided by `@openfeature/flagd-core`'s strict parse (its
 * JSON schema validation, `$evaluators` / `$ref` expansion and structural checks), so exactly
 * the documents flagd accepts pass. (`$schema` and other top-level properties are kept as they
 * come: flagd does not check them.)
 */
export const flagdConfigSchema = z
  .object({
    $evaluators: z.record(z.string(), jsonSchema).optional(),
    metadata: z.record(z.string(), jsonSchema).optional(),
    flags: z.record(z.string(), flagSchema),
  })
  .loose()
  .superRefine((config, ctx) => {
    const problem = flagdProblem(JSON.stringify(config));
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

/** A flagd flag definition file. */
export type FlagdConfig = z.infer<typeof flagdConfigSchema>;
