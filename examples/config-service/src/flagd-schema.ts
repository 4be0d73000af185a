import { z } from "zod";

/** Any JSON value (what variants and targeting rules hold). */
export const jsonSchema = z.json();
/** A JSON value. */
export type Json = z.infer<typeof jsonSchema>;
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** Flag keys and variant names: what flagd accepts, kept to a safe character set. */
export const nameSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.-]+$/, "letters, digits and _ . - only");

const metadataSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

/** The kind of a variant value; all variants of one flag share a kind (flagd's flag types). */
export type VariantKind = "boolean" | "string" | "number" | "object";

/** Kind of a variant value (arrays and null count as objects, as in flagd's object flags). */
export function variantKind(value: Json): VariantKind {
  const kind = typeof value;
  return kind === "boolean" || kind === "string" || kind === "number" ? kind : "object";
}

/**
 * One flag of a flagd flag definition file (https://flagd.dev/reference/flag-definitions/):
 * its state, its variants, the variant served by default, and optional JsonLogic targeting.
 */
export const flagSchema = z
  .object({
    state: z.enum(["ENABLED", "DISABLED"]),
    variants: z.record(nameSchema, jsonSchema),
    defaultVariant: nameSchema,
    targeting: z.record(z.string(), jsonSchema).optional(),
    metadata: metadataSchema.optional(),
  })
  .superRefine((flag, ctx) => {
    const values = Object.values(flag.variants);
    if (values.length === 0) ctx.addIssue({ code: "custom", message: "a flag needs a variant" });
    if (!Object.hasOwn(flag.variants, flag.defaultVariant)) {
      ctx.addIssue({
        code: "custom",
        message: `default variant ${flag.defaultVariant} is missing`,
      });
    }
    if (new Set(values.map(variantKind)).size > 1) {
      ctx.addIssue({ code: "custom", message: "all variants of a flag must be of one kind" });
    }
  });

/** A flag. */
export type Flag = z.infer<typeof flagSchema>;

/** A whole flagd flag definition file: the shared state of the `feature-flags` model. */
export const flagdConfigSchema = z.object({
  $schema: z.string().optional(),
  metadata: metadataSchema.optional(),
  flags: z.record(nameSchema, flagSchema),
});

/** A flagd flag definition file. */
export type FlagdConfig = z.infer<typeof flagdConfigSchema>;
