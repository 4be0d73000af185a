import {
  stateHash,
  type StateSynchronizer,
  type SyncStats,
  type SyncStatus,
} from "@statesync/core";

/** The global under which {@link exposeSynchronizer} registers replicas (a record by name). */
export const EXPOSED_GLOBAL = "__statesync__";

/** A JSON view of a replica at one moment, for test runners (`@statesync/playwright`). */
export interface SyncProbe {
  readonly clientId: string;
  readonly revision: number;
  readonly status: SyncStatus;
  /** `stateHash(state)`: equal on replicas with equal states. */
  readonly hash: string;
  readonly stats: SyncStats;
}

/** What {@link exposeSynchronizer} puts at `globalThis.__statesync__[name]`. */
export interface ExposedSynchronizer {
  readonly sync: StateSynchronizer<any, any>;
  /** The probe taken when it was exposed (right after opening: the restored state). */
  readonly opened: SyncProbe;
  /** `code: message` of every error the replica reported since it was exposed. */
  readonly errors: string[];
  /** A fresh probe. */
  probe(): SyncProbe;
}

/** A JSON view of `sync` now (hashes the state: linear in its size). */
export function probeSynchronizer(sync: StateSynchronizer<any, any>): SyncProbe {
  return {
    clientId: sync.clientId,
    revision: sync.revision,
    status: sync.status,
    hash: stateHash(sync.state),
    stats: { ...sync.stats },
  };
}

/**
 * Makes a replica reachable from test runners and devtools as `globalThis.__statesync__[name]`
 * (see {@link ExposedSynchronizer}): `page.evaluate` can then read its probe or call it. Meant
 * for tests and debugging builds; returns a function that removes it again.
 */
export function exposeSynchronizer(
  sync: StateSynchronizer<any, any>,
  name = "default",
): () => void {
  const registry = ((globalThis as Record<string, unknown>)[EXPOSED_GLOBAL] ??= {}) as Record<
    string,
    ExposedSynchronizer
  >;
  const errors: string[] = [];
  const stop = sync.on("error", (e) => errors.push(`${e.code}: ${e.message}`));
  const exposed: ExposedSynchronizer = {
    sync,
    opened: probeSynchronizer(sync),
    errors,
    probe: () => probeSynchronizer(sync),
  };
  registry[name] = exposed;
  return () => {
    stop();
    if (registry[name] === exposed) delete registry[name];
  };
}
