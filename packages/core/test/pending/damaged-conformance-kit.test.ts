import {
  MemoryPendingStore,
  type DamagedPendingRecord,
  type PendingLoad,
  type PendingQueue,
  type PendingRecord,
  type PendingStore,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import {
  checkDamagedFates,
  checkLeftInPlace,
  type DamagedRecordHarness,
} from "../../src/testing/pending-damaged-conformance.js";

/**
 * The kit's own tests of its damaged-record cases: they pass for correct stores (one in memory,
 * which deletes every damaged record, and a fake that leaves a record it cannot delete in place,
 * as FilePendingStore does with a file it cannot move) and fail for stores that misreport what
 * they did, so that a store which does pass them says what it did.
 */

/** A queue that hands every call to `inner`, with what `load` says of damaged records edited. */
class EditedQueue implements PendingQueue {
  private loads = 0;
  constructor(
    private readonly inner: PendingQueue,
    private readonly edit: (
      damaged: DamagedPendingRecord[],
      load: number,
    ) => DamagedPendingRecord[],
  ) {}
  get durable(): boolean {
    return this.inner.durable;
  }
  get origin(): string {
    return this.inner.origin;
  }
  async load(): Promise<PendingLoad> {
    const { damaged, ...rest } = await this.inner.load();
    const edited = this.edit(damaged ?? [], this.loads++);
    return edited.length > 0 ? { ...rest, damaged: edited } : rest;
  }
  put(record: PendingRecord): Promise<void> {
    return this.inner.put(record);
  }
  delete(seqs: readonly number[]): Promise<void> {
    return this.inner.delete(seqs);
  }
  clear(): Promise<void> {
    return this.inner.clear();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** `inner` with what each of its queues' loads says of damaged records edited. */
function edited(inner: PendingStore, edit: ConstructorParameters<typeof EditedQueue>[1]) {
  return {
    open: async (key: string, owner: string) => new EditedQueue(await inner.open(key, owner), edit),
  } satisfies PendingStore;
}

function memory(): DamagedRecordHarness & { inner: MemoryPendingStore } {
  const inner = new MemoryPendingStore();
  return {
    inner,
    store: inner,
    reopen: async () => inner.sibling(),
    corrupt: async (key, owner, seq) => inner.corrupt(key, owner, seq),
  };
}

/**
 * A store over memory that can leave a damaged record in place: a jammed record's delete fails,
 * so it stays (the fake keeps it where the memory store dropped it) and each load says so, until
 * the jam is lifted; the next load then deletes it (reported once, with its content).
 */
function jamming(): DamagedRecordHarness {
  const base = memory();
  const jams = new Map<number, { jammed: boolean; seen?: DamagedPendingRecord }>();
  const edit = (damaged: DamagedPendingRecord[]) => {
    const out = damaged.filter((d) => !jams.has(d.seq));
    for (const [seq, jam] of jams) {
      jam.seen ??= damaged.find((d) => d.seq === seq);
      if (jam.seen === undefined) continue;
      if (jam.jammed) out.push({ seq, reason: jam.seen.reason, leftInPlace: true });
      else {
        out.push(jam.seen); // deleted now, with its content
        jams.delete(seq);
      }
    }
    return out.sort((a, b) => a.seq - b.seq);
  };
  return {
    store: edited(base.inner, edit),
    reopen: async () => edited(base.inner.sibling(), edit),
    corrupt: base.corrupt,
    corruptImmovable: async (key, owner, seq) => {
      base.inner.corrupt(key, owner, seq);
      jams.set(seq, { jammed: true });
      return async () => {
        jams.get(seq)!.jammed = false;
      };
    },
  };
}

/** `h` with what its store's loads say of damaged records edited (its reopened stores too). */
function misreporting(
  h: DamagedRecordHarness,
  edit: ConstructorParameters<typeof EditedQueue>[1],
): DamagedRecordHarness {
  return {
    ...h,
    store: edited(h.store, edit),
    reopen: async () => edited(await h.reopen(), edit),
  };
}

describe("the damaged-record cases of the pending-store kit", () => {
  it("pass for a store in memory and for one that leaves records it cannot delete in place", async () => {
    await checkDamagedFates(memory());
    await checkLeftInPlace(memory());
    await checkDamagedFates(jamming());
    await checkLeftInPlace(jamming());
  });

  const each =
    (f: (d: DamagedPendingRecord) => DamagedPendingRecord) => (ds: DamagedPendingRecord[]) =>
      ds.map(f);
  const broken: Array<[string, () => Promise<void>, RegExp]> = [
    [
      "says left in place of the records it deleted",
      () =>
        checkDamagedFates(
          misreporting(
            memory(),
            each(({ seq, reason }) => ({ seq, reason, leftInPlace: true })),
          ),
        ),
      /handed back again: left in place/,
    ],
    [
      "says left in place of the records it deleted (the in-place case)",
      () =>
        checkLeftInPlace(
          misreporting(
            memory(),
            each(({ seq, reason }) => ({ seq, reason, leftInPlace: true })),
          ),
        ),
      /a store that cannot leave one: none left in place/,
    ],
    [
      "says both kept aside and left in place",
      () =>
        checkLeftInPlace(
          misreporting(
            jamming(),
            each((d) => (d.leftInPlace ? { ...d, keptAs: "/aside" } : d)),
          ),
        ),
      /both kept aside and left in place/,
    ],
    [
      "says leftInPlace: false of a deleted record",
      () =>
        checkDamagedFates(
          misreporting(
            memory(),
            each((d) => ({ ...d, leftInPlace: false as never })),
          ),
        ),
      /leftInPlace is true or absent/,
    ],
    [
      "says deleted of a record it left in place (no content either)",
      () =>
        checkLeftInPlace(
          misreporting(
            jamming(),
            each(({ seq, reason, leftInPlace }) =>
              leftInPlace ? { seq, reason } : { seq, reason, content: "x" },
            ),
          ),
        ),
      /deleted, so what it held is its content/,
    ],
    [
      "says deleted, with its content, of a record it left in place",
      () =>
        checkLeftInPlace(
          misreporting(
            jamming(),
            each(({ seq, reason }) => ({ seq, reason, content: "x" })),
          ),
        ),
      /the record it could not move/,
    ],
    [
      "says nothing, after the first load, of a record it left in place",
      () =>
        checkLeftInPlace(
          misreporting(jamming(), (ds, load) =>
            load === 0 ? ds : ds.filter((d) => !d.leftInPlace),
          ),
        ),
      /expected undefined to deeply equal|expected \[\] to deeply equal/,
    ],
    [
      "reports a damaged record twice",
      () => checkDamagedFates(misreporting(memory(), (ds) => [...ds, ...ds])),
      /expected \[ 2, 4, 2, 4 \] to deeply equal/,
    ],
  ];

  it.each(broken)("fail for a store that %s", async (_, check, message) => {
    await expect(check()).rejects.toThrow(message);
  });
});
