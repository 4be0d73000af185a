import type { Json } from "./flagd-schema.js";

/** Revision and state hash of one replica of one state. */
export interface StateReport {
  readonly revision: number;
  readonly hash: string;
}

/** What one replica reports at the end: its states and the flag values it serves. */
export interface ReplicaReport {
  readonly replica: string;
  readonly flags?: StateReport;
  readonly membership?: StateReport;
  /** `"flag for user"` → value served (see `EXPECTATIONS`). */
  readonly observed?: Record<string, Json>;
}

/** One state of the flags a service's replica held, as its subscriber saw it. */
export interface FlagsObservation {
  readonly revision: number;
  /** The model version the log was at (below the replica's own while an upgrade is pending). */
  readonly logVersion: number;
  /** The state as the replica showed it (migrated up while an upgrade is pending). */
  readonly state: Json;
}

/** What a service says about its replica of the flags (answer to `inspect`). */
export interface FlagsInspection {
  readonly replica: string;
  /** The model version the service runs. */
  readonly version: number;
  readonly revision: number;
  readonly status: string;
  /** Code and details of the error that stalled the replica, if it is stalled. */
  readonly stall?: { readonly code: string; readonly details: Json } | undefined;
  readonly upgradePending: boolean;
  readonly hash: string;
  /** `"flag for user"` → value served (see `EXPECTATIONS`). */
  readonly observed: Record<string, Json>;
  /** Every state it held, oldest first. */
  readonly observations: readonly FlagsObservation[];
}

/** Orchestrator → child. */
export type ToChild =
  /** Stop writing (services stop their heartbeats), then answer `quiesced`. */
  | { type: "quiesce" }
  /** Catch up with the log, then answer `report`. */
  | { type: "report" }
  /** An admin action: a conditional update of the flags; answers `command-result`. */
  | { type: "command"; name: string; args: Json }
  /** Switch the log to the service's model version (`sync.upgrade()`); answers `command-result`. */
  | { type: "upgrade" }
  /** Wait until revision `atLeast` is consumed or the replica stalls, then answer `inspection`. */
  | { type: "inspect"; atLeast: number }
  /** Close everything and exit. */
  | { type: "exit" };

/** Child → orchestrator. */
export type FromChild =
  | { type: "ready" }
  | { type: "done"; changes: number; rejected: number; conflicts: number }
  | { type: "quiesced" }
  | { type: "report"; replicas: ReplicaReport[] }
  | { type: "command-result"; revision?: number; code?: string; message?: string }
  | { type: "inspection"; flags: FlagsInspection }
  | { type: "failed"; message: string };

/**
 * Sends a message to the orchestrator; nothing once it went away (the child exits on
 * `disconnect`): a send on a closed channel would fail with EPIPE or ERR_IPC_CHANNEL_CLOSED.
 */
export function toParent(message: FromChild): void {
  if (process.connected) process.send?.(message, undefined, {}, () => undefined);
}

/**
 * Runs a child process's body: `start`, then answers the orchestrator's messages with `handle`.
 * Exits when the orchestrator goes away (so no child outlives it), and reports any failure
 * before exiting 1.
 */
export function runChild(
  name: string,
  start: () => Promise<void>,
  handle: (message: ToChild) => Promise<void>,
): void {
  const fail = (error: unknown): void => {
    const code = (error as { code?: unknown } | undefined)?.code;
    const text = error instanceof Error ? error.message : String(error);
    const message = typeof code === "string" ? `${code}: ${text}` : text;
    console.error(`[${name}] failed: ${message}`);
    toParent({ type: "failed", message: `${name}: ${message}` });
    process.exitCode = 1;
    setImmediate(() => process.exit(1));
  };
  if (!process.send) {
    console.error(`${name} is started by the demo (node dist/demo.js), not on its own`);
    process.exit(2);
  }
  let started = false;
  process.on("disconnect", () => process.exit(1));
  process.on("message", (message: ToChild) => {
    // Asked to exit while still starting: nothing to close cleanly yet.
    if (!started && message.type === "exit") process.exit(0);
    handle(message).catch(fail);
  });
  start().then(() => (started = true), fail);
}
