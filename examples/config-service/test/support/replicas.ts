import { createSynchronizer, MemoryLog } from "@statesync/core";
import { afterEach } from "vitest";
import type { FlagdConfig } from "../../src/flagd-schema.js";
import { flagsModel, type FlagsSynchronizer } from "../../src/flags-model.js";

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((sync) => sync.close()));
});

/** A replica of the flags on a fresh `MemoryLog`, holding `document` when given. */
export async function flagsReplica(document?: FlagdConfig): Promise<FlagsSynchronizer> {
  const sync = await createSynchronizer({ log: new MemoryLog().handle(), model: flagsModel });
  open.push(sync);
  if (document !== undefined) await sync.update("replaceDocument", { document });
  return sync;
}

/** The state of `sync` as a plain flagd document. */
export function plainState(sync: FlagsSynchronizer): FlagdConfig {
  return JSON.parse(JSON.stringify(sync.state)) as FlagdConfig;
}
