import {
  exposeSynchronizer,
  openSynchronizer,
  type SnapshotStoreWarning,
  type SynchronizerOf,
} from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { boardModel } from "./board-model.js";
import type { BoardConfig } from "./config.js";

/** A replica of a board. */
export type BoardSync = SynchronizerOf<typeof boardModel>;

/**
 * Opens the board's replica: resolves as soon as the state stored in IndexedDB is restored
 * (the page renders it before the server answers), then catches up and follows the server.
 * A snapshot is written after every entry (a board is small), so a reload shows the latest
 * state; edits wait in the offline queue (IndexedDB) while the server is away, also across
 * reloads. The replica is exposed for tests as `__statesync__.default`.
 */
export async function openBoard(
  config: BoardConfig,
  onWarning: (warning: SnapshotStoreWarning) => void,
): Promise<BoardSync> {
  const sync = await openSynchronizer({
    servers: config.server,
    stream: `board_${config.board}`,
    model: boardModel,
    snapshotEvery: 1,
    // Edits made offline are stored in IndexedDB, shown at once and sent when the server is back.
    pending: offlineQueue({ owner: "board" }),
    onWarning,
  });
  exposeSynchronizer(sync);
  return sync;
}
