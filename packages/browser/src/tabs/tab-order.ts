import type { OrderKey, PushOrder } from "@statesync/core";

/**
 * The order a tab's queue pushes in among the other tabs' queues (docs/offline.md, "Tabs"): a
 * {@link PushOrder} given to the queue when it is opened, that answers from the other tabs'
 * reports once `attach` gave it their source (`sharePendingAcrossTabs`, opened after the
 * replica). Until then it holds nothing back.
 */
export class TabPushOrder implements PushOrder {
  private source: PushOrder | undefined;
  private readonly waiting = new Set<() => void>();

  /** Answers from `source` from now on; wakes the waits that started before. */
  attach(source: PushOrder): void {
    this.source = source;
    for (const listener of [...this.waiting]) listener();
    this.waiting.clear();
  }

  before(key: OrderKey, skip: (other: OrderKey) => boolean): OrderKey | undefined {
    return this.source?.before(key, skip);
  }

  onChange(listener: () => void): () => void {
    if (this.source) return this.source.onChange(listener);
    this.waiting.add(listener);
    return () => void this.waiting.delete(listener);
  }
}
