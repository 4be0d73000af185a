import { openSynchronizer, type CommandMap, type Model } from "@statesync/node";
import type { EvaluationContext } from "./evaluate.js";

/** JetStream streams: one per shared state, so heartbeats never conflict with flag changes. */
export const FLAGS_STREAM = "feature-flags";
export const MEMBERSHIP_STREAM = "membership";

/** Services heartbeat this often; a member is live when its last heartbeat is this recent. */
export const HEARTBEAT_MS = 300;
export const MEMBER_TTL_MS = 1_500;

/** The user each service evaluates flags for (one per service, to see the rollout progress). */
export const USERS = {
  anna: {
    targetingKey: "anna",
    email: "anna@example.com",
    country: "de",
    plan: "pro",
    appVersion: "2.5.0",
    locale: "de-DE",
  },
  dave: {
    targetingKey: "dave",
    email: "dave@example.com",
    country: "us",
    plan: "free",
    appVersion: "2.3.1",
    locale: "en-US",
  },
  carol: {
    targetingKey: "carol",
    email: "carol@example.com",
    country: "nl",
    plan: "enterprise",
    appVersion: "3.1.0",
    locale: "nl-NL",
  },
} satisfies Record<string, EvaluationContext>;

/** A user's name. */
export type UserName = keyof typeof USERS;

/** The services the demo runs, and whom each one serves. */
export const SERVICES: ReadonlyArray<{ name: string; user: UserName }> = [
  { name: "service-1", user: "anna" },
  { name: "service-2", user: "dave" },
  { name: "service-3", user: "carol" },
];

/**
 * Opens a replica of one state on the demo's server. No snapshots on disk: every run starts a
 * fresh server, and the demo's processes share one working directory. `upgrade` is when a
 * replica of a newer model version switches the log (docs/versions.md; default `"on-open"`).
 */
export function openReplica<S, C extends CommandMap<S>>(
  servers: string,
  stream: string,
  model: Model<S, C>,
  clientId: string,
  upgrade: "on-open" | "manual" = "on-open",
) {
  return openSynchronizer({ servers, stream, model, clientId, snapshots: false, upgrade });
}

/** First 8 hex digits of a state hash: enough to tell replicas apart in a log line. */
export function shortHash(hash: string): string {
  return hash.slice(0, 8);
}

/** Prints one log line prefixed with the process name, padded so columns line up. */
export function log(name: string, text: string): void {
  console.log(`${`[${name}]`.padEnd(12)} ${text}`);
}
