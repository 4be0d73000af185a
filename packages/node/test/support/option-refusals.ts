import { StateSyncError } from "@statesync/core";

// zod's own word for a failed union or an unlabelled z.custom: it names neither what the
// option accepts nor what to write (a new user's `snapshots: true`, `onError: "log"`).
const bare = /Invalid input(?!:)/;

/** Wrong values of every type, tried for each option. */
export const wrongValues: readonly unknown[] = [true, 7, "x", {}, [], () => 1];

/** `value` as a test label. */
export function shown(value: unknown): string {
  return typeof value === "function" ? "a function" : JSON.stringify(value);
}

/**
 * What is wrong with the refusal of `{ [key]: value }` by `caller` (undefined when nothing): it
 * must be `VALIDATION`, say what to write (not zod's bare "Invalid input"), start with
 * `invalid <caller> options: ` whichever layer below checked the option (the runtime package,
 * createSynchronizer, JetStreamLog), and name `key` as the user wrote it: zod's `→ at <key>`
 * (or a path under it), or `Unrecognized key: "<key>"`.
 */
export function refusalProblem(error: unknown, caller: string, key: string): string | undefined {
  if (!(error instanceof StateSyncError) || error.code !== "VALIDATION") {
    return `not VALIDATION: ${String(error)}`;
  }
  const message = error.message;
  if (bare.test(message)) return message;
  if (!message.startsWith(`invalid ${caller} options: `)) return `not ${caller}'s: ${message}`;
  const at = new RegExp(`→ at ${key}(\\.|\\[|$)`, "m");
  if (!at.test(message) && !message.includes(`Unrecognized key: "${key}"`)) {
    return `does not name ${key}: ${message}`;
  }
  return undefined;
}

/** The issues of a refusal's zod error, as `path: message` (its `cause`). */
export function zodIssues(error: unknown): string[] {
  const cause = (error as { cause?: { issues?: Array<{ path: unknown[]; message: string }> } })
    .cause;
  return (cause?.issues ?? []).map((i) => `${i.path.join(".")}: ${i.message}`);
}
