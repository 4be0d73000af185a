import { StateSyncError } from "@statesync/core";
import { expect } from "vitest";
import { optionsSchema as coreOptionsSchema } from "../../../core/src/engine/options.js";
import { jetStreamLogOptionsSchema } from "../../../core/src/jetstream/jetstream-log-options.js";

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

/** Options of createSynchronizer / JetStreamLog that openSynchronizer makes itself. */
const internal = new Set(["log", "ownsLog", "onClose", "connectionErrors", "whyNotConnected"]);

/**
 * The options a runtime's openSynchronizer takes: its own (`own`, the shape of its schema) and
 * those of the layers below (createSynchronizer, JetStreamLog), less those it makes itself.
 */
export function openOptionKeys(own: object): string[] {
  return [
    ...new Set([
      ...Object.keys(own),
      ...Object.keys(coreOptionsSchema.shape),
      ...Object.keys(jetStreamLogOptionsSchema.shape),
    ]),
  ].filter((k) => !internal.has(k));
}

/** The error `open()` rejects with; undefined when it opens (what it opened is closed again). */
export async function openingError(
  open: () => Promise<{ close(): Promise<unknown> }>,
): Promise<unknown> {
  try {
    const opened = await open();
    await opened.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

/**
 * What is wrong with openSynchronizer's refusal of each of {@link wrongValues} as `key`, beside
 * `base` (without `servers` for `connection`), as `<value>: <problem>` (see
 * {@link refusalProblem}); `open` returns the error of one opening. A value of the right type,
 * which opens, is none.
 */
export async function wrongValueProblems(
  key: string,
  base: Record<string, unknown>,
  open: (options: Record<string, unknown>) => Promise<unknown>,
): Promise<string[]> {
  const problems: string[] = [];
  for (const value of wrongValues) {
    const options: Record<string, unknown> = { ...base, [key]: value };
    if (key === "connection") delete options.servers;
    const error = await open(options);
    if (error === undefined) continue; // a value of the right type
    // Whichever layer checks the option (openSynchronizer, createSynchronizer, JetStreamLog),
    // the message names the function called and the option as written (before, a trial:
    // "invalid synchronizer options", "invalid JetStreamLog options").
    const problem = refusalProblem(error, "openSynchronizer", key);
    if (problem !== undefined) problems.push(`${shown(value)}: ${problem}`);
  }
  return problems;
}

/** The paths of a VALIDATION refusal by `caller`. */
export function refusedAt(error: unknown, caller: string): string[] {
  expect(error, caller).toBeInstanceOf(StateSyncError);
  expect([(error as StateSyncError).code, (error as Error).message]).toEqual([
    "VALIDATION",
    expect.stringMatching(new RegExp(`^invalid ${caller} options: `)),
  ]);
  return zodIssues(error).map((issue) => issue.slice(0, issue.indexOf(":")));
}
