import type { OrderKey, PushOrder } from "@statesync/core";

/**
 * The order in which a tab's queues push among the other tabs' (docs/offline.md, "Tabs"): its
 * own queue's, and those of dead tabs' slots that it drains (`drainOrphanedSlots`). `of(queue)`
 * is the {@link PushOrder} given to a queue when it is opened; it answers from the tabs'
 * reports once `attach` gave them (`sharePendingAcrossTabs`, opened after the replica). Until
 * then it holds nothing back.
 */
export class TabPushOrder {
  private source: ((queue: string) => PushOrder) | undefined;
  private readonly waiting = new Set<() => void>();

  /** Answers from `source` (the order of a queue, by its name) from now on; wakes the waits. */
  attach(source: (queue: string) => PushOrder): void {
    this.source = source;
    for (const listener of [...this.waiting]) listener();
    this.waiting.clear();
  }

  /** The order of the queue named `queue` (its slot's owner name). */
  of(queue: string): PushOrder {
    return {
      before: (
        key: OrderKey,
        skip: (other: OrderKey) => boolean,
        applied: (origin: string) => number | undefined,
      ) => this.source?.(queue).before(key, skip, applied),
      onChange: (listener: () => void) => {
        if (this.source) return this.source(queue).onChange(listener);
        this.waiting.add(listener);
        return () => void this.waiting.delete(listener);
      },
    };
  }
}
