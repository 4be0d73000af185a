/**
 * `@statesync/node`: statesync for Node.js. Everything of `@statesync/core`, plus a TCP
 * connection with `nats` (`openSynchronizer`), snapshots on disk (`FileSnapshotStore`) and a
 * throwaway nats-server for tests and demos (`startNatsServer`).
 */
export * from "@statesync/core";
export {
  openSynchronizer,
  defaultSnapshotDir,
  type OpenSynchronizerOptions,
} from "./open-synchronizer.js";
export { FileSnapshotStore, snapshotFileName } from "./file-snapshot-store.js";
export { FilePendingStore } from "./file-pending-store.js";
export { readRegularFile } from "./regular-file.js";
export { pendingQueueFolder } from "./queue-folder.js";
export { connectInBackground, type BackgroundConnection } from "./background-connect.js";
export { connectNats, isTcpServerUrl } from "./connect-nats.js";
export { connectFailureOf, tlsFailure, type TlsFailure } from "./tls-failure.js";
export { findNatsServer, getFreePort, NatsServerNotFoundError } from "./find-nats-server.js";
export {
  startNatsServer,
  type NatsServer,
  type NatsServerExit,
  type NatsServerPorts,
  type StartNatsServerOptions,
} from "./nats-server.js";
