import type { Reader } from "../engine/reader.js";
import type { Replica } from "../engine/replica.js";
import type { StatusHub } from "../engine/status.js";
import type { Writer } from "../engine/writer.js";
import type { CommandMap, Model } from "../model.js";
import type { LogIdentities } from "./log-binding.js";
import type { PushOrder } from "./push-order.js";

/** What the queue needs of the other parts. */
export interface OfflineQueueParts<S, C extends CommandMap<S>> {
  readonly model: Model<S, C>;
  readonly clientId: string;
  readonly replica: Replica<S, C>;
  readonly writer: Writer<S, C>;
  readonly reader: Reader<S, C>;
  readonly status: StatusHub;
  /** Which log the replica's state comes from (`log-binding.ts`). */
  readonly logIdentities: LogIdentities;
  /** Other queues' updates this one's must not overtake (`PendingQueueSetup.order`). */
  readonly order?: PushOrder | undefined;
}
