/**
 * A server that went away, said one way by every command. The library tells a program two
 * things: `UNAVAILABLE` (the server does not answer; a replica retries) and `CONNECTION_CLOSED`
 * (nats.js gave the connection up for good; "open a new replica on a new connection"). A command
 * connects with few reconnect attempts (session.ts), so a server killed under it ends as either,
 * depending on the call it was in: a trial killed the server during `compact` and read
 * `CONNECTION_CLOSED` with a replica's advice, where the rest of the CLI says `UNAVAILABLE`. For
 * an operator both mean the same: the server went away; check it and run the command again.
 */
import { isStateSyncError, type StateSyncError, type StateSyncErrorCode } from "@statesync/node";

/** Codes that say the server or the connection to it failed: nothing about the log itself. */
export const SERVER_GONE: ReadonlySet<StateSyncErrorCode> = new Set([
  "UNAVAILABLE",
  "CONNECTION_CLOSED",
]);

/** Whether `err` says the server (or the connection to it) went away. */
export function isServerGone(err: unknown): err is StateSyncError {
  return isStateSyncError(err) && SERVER_GONE.has(err.code);
}

/** A program's advice (core's `connectionClosedError`), which means nothing at a prompt. */
const REPLICA_ADVICE = /; open a new replica on a new connection/g;
const CLOSED_FOR_GOOD = /^the log's connection is closed for good/;

/**
 * The code and message the CLI prints for `error`: `CONNECTION_CLOSED` reads `UNAVAILABLE`, and
 * a message ending with the replica's advice (also inside another error's, `UNKNOWN_OUTCOME`)
 * tells the operator what to do instead.
 */
export function operatorCode(
  code: StateSyncErrorCode,
  message: string,
): { code: StateSyncErrorCode; message: string } {
  const text = message
    .replace(CLOSED_FOR_GOOD, "the connection to the server was lost and could not be made again")
    .replace(REPLICA_ADVICE, "; check the server, then run the command again");
  return { code: code === "CONNECTION_CLOSED" ? "UNAVAILABLE" : code, message: text };
}
