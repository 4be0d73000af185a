import {
  StateSyncError,
  stateHash,
  type CommandMap,
  type StateSynchronizer,
} from "@statesync/node";
import type { FlagdConfig, Json } from "./flagd-schema.js";
import { flagsModel } from "./flags-model.js";
import { flagsModelV2 } from "./flags-model-v2.js";
import type { FlagsInspection, FlagsObservation, FromChild } from "./ipc.js";
import { evaluateExpectations } from "./script.js";
import { FLAGS_STREAM, openReplica } from "./shared.js";

/** A replica of the flags at either model version (commands are called by name). */
export type FlagsReplica = StateSynchronizer<FlagdConfig, CommandMap<FlagdConfig>>;

/** The versions of the `feature-flags` model a service can run. */
export const FLAGS_MODELS = { 1: flagsModel, 2: flagsModelV2 } as const;

/** A version of the `feature-flags` model. */
export type FlagsVersion = keyof typeof FLAGS_MODELS;

/**
 * A service's replica of the flags, running model `version`, and every state it held (its
 * subscriber's view, recorded so a test can compare replicas revision by revision).
 */
export class ServiceFlags {
  readonly #observations: FlagsObservation[] = [];

  private constructor(readonly sync: FlagsReplica) {
    this.#record();
    sync.subscribe(() => this.#record());
  }

  /**
   * Opens the replica on `servers` as client `name`. `upgrade` says when a version-2 replica
   * switches a version-1 log (docs/versions.md). Throws what `openSynchronizer` throws, such
   * as `MODEL_UPGRADED` for version 1 on a log already switched to version 2.
   */
  static async open(
    servers: string,
    name: string,
    version: FlagsVersion,
    upgrade: "on-open" | "manual",
  ): Promise<ServiceFlags> {
    const model = FLAGS_MODELS[version];
    const sync = await openReplica(servers, FLAGS_STREAM, model, name, upgrade);
    return new ServiceFlags(sync as unknown as FlagsReplica);
  }

  /** The model version of the log: the predecessor's while an upgrade is pending. */
  #logVersion(): number {
    const { model } = this.sync;
    return this.sync.upgradePending ? (model.predecessor?.version ?? 0) : model.version;
  }

  /** Records the state shown now (a subscriber runs right after each batch is applied). */
  #record(): void {
    const { revision, state } = this.sync;
    const plain = JSON.parse(JSON.stringify(state)) as Json;
    this.#observations.push({ revision, logVersion: this.#logVersion(), state: plain });
  }

  /**
   * Runs an admin action: a conditional update with command `name` (or, for `"upgrade"`, the
   * switch of the log to this replica's version). Answers with the revision written, or with the
   * refusal's code (a `StateSyncError` code, or the name of the error a command threw).
   */
  async act(name: string, args: Json): Promise<FromChild> {
    try {
      const { revision } =
        name === "upgrade"
          ? await this.sync.upgrade()
          : await this.sync.update(name, args as never);
      return { type: "command-result", revision };
    } catch (error) {
      const code = error instanceof StateSyncError ? error.code : (error as Error).name;
      return { type: "command-result", code, message: (error as Error).message };
    }
  }

  /**
   * Waits until revision `atLeast` is consumed, or the replica stops (stalled at a switch it
   * cannot read), then describes the replica: revision, status, stall, state hash, the flag
   * values it serves and every state it held.
   */
  async inspect(replica: string, atLeast: number): Promise<FlagsInspection> {
    await this.sync.waitFor(atLeast).catch((error: unknown) => {
      if (this.sync.status !== "stalled") throw error;
    });
    const { sync } = this;
    const state = sync.state as unknown as FlagdConfig;
    const stall = sync.stallReason;
    return {
      replica,
      version: sync.model.version,
      revision: sync.revision,
      status: sync.status,
      stall: stall && {
        code: stall.code,
        details: JSON.parse(JSON.stringify(stall.details ?? null)) as Json,
      },
      upgradePending: sync.upgradePending,
      hash: stateHash(state),
      observed: evaluateExpectations(state),
      observations: [...this.#observations],
    };
  }
}
