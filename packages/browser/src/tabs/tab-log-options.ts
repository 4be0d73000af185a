import type { RevisionedLog } from "@statesync/core";
import { z } from "zod/v4";
import { fnSchema, notAnObject } from "../option-words.js";
import type { LockManagerLike, TokenStore } from "./leadership.js";

/** The log a leading tab runs on (a `JetStreamLog` over its own connection), and its release. */
export interface LeaderLog {
  readonly log: RevisionedLog;
  close(): Promise<void>;
}

/** Options of `TabLog` (`tab-log.ts`). */
export interface TabLogOptions {
  /** One name per origin and state: the channel's, the lock's and the token's. */
  readonly name: string;
  /** Whether the state owns its stream (`RevisionedLog.contiguous`). */
  readonly contiguous: boolean;
  /** Makes the log this tab uses while it leads (called each time it takes the lead). */
  leaderLog(): LeaderLog;
  readonly locks: LockManagerLike;
  readonly tokens: TokenStore;
  /** Default: `new BroadcastChannel(name)`. */
  readonly channel?: BroadcastChannel;
  /** This tab's id (default: random). */
  readonly tabId?: string;
  /**
   * `RevisionedLog.identityPrefix` of the logs `leaderLog` makes, known before any is made
   * (`openTabLog` gives the `JetStreamLog`'s). Absent: the tabs' log has none either.
   */
  readonly identityPrefix?: string;
}

const hasMethods = (what: string, methods: readonly string[]) =>
  z.custom<unknown>(
    (v) =>
      typeof v === "object" &&
      v !== null &&
      methods.every((m) => typeof (v as Record<string, unknown>)[m] === "function"),
    `${what} must have ${methods.join(", ")}`,
  );

/**
 * zod schema of {@link TabLogOptions} (strict). `tabId` and `name` as the other tabs read them:
 * a tab id over 64 characters, which every other tab's message check drops, is refused here.
 */
export const tabLogOptionsSchema = z.strictObject(
  {
    name: z.string().min(1),
    contiguous: z.boolean(),
    leaderLog: fnSchema,
    locks: hasMethods("locks (a LockManager)", ["request"]),
    tokens: hasMethods("tokens (a Storage)", ["getItem", "setItem", "removeItem"]),
    channel: hasMethods("channel (a BroadcastChannel)", ["postMessage", "close"]).optional(),
    tabId: z.string().min(1).max(64).optional(),
    identityPrefix: z.string().optional(),
  },
  { error: notAnObject("TabLogOptions") },
);
