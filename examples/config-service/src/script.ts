import type { CommandArgs, UpdateResult } from "@statesync/core";
import { FlagEvaluator, type FlagsState } from "./evaluate.js";
import type { FlagdConfig, Json } from "./flagd-schema.js";
import type { FlagCommands, FlagsSynchronizer } from "./flags-model.js";
import { USERS, type UserName } from "./shared.js";

/** The two admin sessions (two replicas, two client ids) that edit the flags concurrently. */
export type AdminSession = "admin-a" | "admin-b";

/** One change an admin makes with a conditional update. */
export interface Change {
  readonly session: AdminSession;
  readonly label: string;
  /** The change is invalid: the command must throw (and nothing be written). */
  readonly rejected?: boolean;
  run(flags: FlagsSynchronizer): Promise<UpdateResult<FlagdConfig>>;
}

function change<K extends keyof FlagCommands & string>(
  session: AdminSession,
  label: string,
  command: K,
  args: CommandArgs<FlagCommands[K]>,
  rejected = false,
): Change {
  return { session, label, rejected, run: (flags) => flags.update(command, args) };
}

/**
 * The admin's script: steps run one after the other; the changes within a step run at the same
 * time from both sessions, so one of them conflicts and is retried on the newer state.
 */
export const SCRIPT: ReadonlyArray<ReadonlyArray<Change>> = [
  [
    change("admin-a", "toggle dark-mode on", "setFlagState", {
      flag: "dark-mode",
      state: "ENABLED",
    }),
  ],
  [
    change("admin-a", "roll out new-checkout to 10%", "rollOut", {
      flag: "new-checkout",
      variant: "on",
      percent: 10,
    }),
    change("admin-b", "default button color → green", "setDefaultVariant", {
      flag: "checkout-button-color",
      variant: "green",
    }),
  ],
  [
    change("admin-a", "roll out new-checkout to 50%", "rollOut", {
      flag: "new-checkout",
      variant: "on",
      percent: 50,
    }),
    change("admin-b", "add button color purple", "addVariant", {
      flag: "checkout-button-color",
      variant: "purple",
      value: "#6a1b9a",
    }),
  ],
  [
    change("admin-a", "roll out new-checkout to 100%", "rollOut", {
      flag: "new-checkout",
      variant: "on",
      percent: 100,
    }),
    change("admin-b", "default button color → purple", "setDefaultVariant", {
      flag: "checkout-button-color",
      variant: "purple",
    }),
    change("admin-b", "remove unused search variant legacy", "removeVariant", {
      flag: "search-algorithm",
      variant: "legacy",
    }),
  ],
  [
    change(
      "admin-b",
      "default button color → pink (no such variant)",
      "setDefaultVariant",
      { flag: "checkout-button-color", variant: "pink" },
      true,
    ),
    change("admin-a", "default log-level → warn", "setDefaultVariant", {
      flag: "log-level",
      variant: "warn",
    }),
  ],
];

/** A flag value every replica must serve at the end of the demo. */
interface Expectation {
  readonly flag: string;
  readonly user: UserName;
  readonly fallback: Json;
  readonly expected: Json;
}

/** What the script leads to: the demo checks these on every replica. */
export const EXPECTATIONS: readonly Expectation[] = [
  ...(["anna", "dave", "carol"] as const).flatMap((user) => [
    { flag: "new-checkout", user, fallback: false, expected: true },
    { flag: "dark-mode", user, fallback: false, expected: true },
  ]),
  // anna is in Germany: the targeting rule serves her blue; the others get the new default.
  { flag: "checkout-button-color", user: "anna", fallback: "", expected: "#1565c0" },
  { flag: "checkout-button-color", user: "dave", fallback: "", expected: "#6a1b9a" },
  { flag: "checkout-button-color", user: "carol", fallback: "", expected: "#6a1b9a" },
  { flag: "search-algorithm", user: "dave", fallback: "", expected: "bm25" },
  { flag: "log-level", user: "carol", fallback: "", expected: "warn" },
];

/** Evaluates every expectation on `flags`: `"flag for user"` → value served. */
export function evaluateExpectations(flags: FlagsState): Record<string, Json> {
  const evaluator = new FlagEvaluator();
  const observed: Record<string, Json> = {};
  for (const { flag, user, fallback } of EXPECTATIONS) {
    observed[`${flag} for ${user}`] = evaluator.evaluate(flags, flag, USERS[user], fallback).value;
  }
  return observed;
}
