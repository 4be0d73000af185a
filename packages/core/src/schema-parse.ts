import { z } from "zod/v4";

/**
 * `schema.safeParse(value)` that never throws. A model's schema runs the model's own code
 * (refinements, transforms, `z.lazy` getters): where that code throws, the value fails with one
 * issue saying so, as if the schema had refused it. So a log entry, a stored snapshot or a
 * caller's argument that makes the model's code throw is refused like any invalid one (the same
 * on every replica: the code is deterministic), instead of the throw stopping the reading of the
 * log at that entry, or reaching the caller as the model's raw error instead of `VALIDATION`.
 * A value nested deeper than a state may be must be refused before it gets here: a recursive
 * schema recurses as deep as the value, and a stack overflow is not the same on every replica.
 *
 * Returns zod's own result (`{ success: true, data }` or `{ success: false, error }`); a throw
 * (a stack-overflow `RangeError` included) becomes `{ success: false }` with one `custom` issue
 * at path `[]` whose message is `the schema threw: <the error>`. Never throws. Exported for the
 * runtime packages and tools that run a model's schema on values from outside (the CLI, the
 * browser's tabs); an app rarely needs it.
 */
export function safeParse<T>(schema: z.ZodType<T>, value: unknown): z.ZodSafeParseResult<T> {
  try {
    return schema.safeParse(value);
  } catch (cause) {
    const message = `the schema threw: ${String(cause)}`;
    const error = new z.ZodError([{ code: "custom", message, path: [], input: value }]);
    return { success: false, error: error as z.ZodError<T> };
  }
}

/**
 * Why a state a log entry carries (a snapshot or switch entry, whole or in parts) fails the
 * model's schema: zod's reasons, and the likeliest cause when this app wrote the entry itself,
 * a state schema changed without a new model version (a new user's trial read only "it fails the
 * state schema", which points at a damaged log).
 */
export function carriedStateRefusal(error: z.ZodError): string {
  return `it fails the state schema (${schemaIssues(error)}); if the model's state schema changed since the entry was written, that change needs a new model version with a predecessor and migrate (docs/versions.md)`;
}

/**
 * zod's words for the first three issues of `error` (at most about 600 characters) and how many
 * more there are: a state from a log entry, a command or a migration can fail in millions of
 * places (a hostile entry, a large state), and each used to be in the message.
 */
export function schemaIssues(error: z.ZodError): string {
  const { issues } = error;
  const more = issues.length > 3 ? `; and ${issues.length - 3} more issues` : "";
  return `${z.prettifyError(new z.ZodError(issues.slice(0, 3))).slice(0, 600)}${more}`;
}
