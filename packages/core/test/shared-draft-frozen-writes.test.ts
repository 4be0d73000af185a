import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog } from "@statesync/core";

/**
 * Several entries or recipes share one Immer draft (a catch-up's batch, a commands entry, the
 * writer's queued recipes, the optimistic view). What an earlier one wrote is frozen there, where
 * alone a later one gets a draft of it; a write into it is refused in the shared draft and the
 * later one runs again alone. A command that caught the refusal (or ran in sloppy mode, where it
 * is silent) used to keep the shared draft's result: a catch-up applying the log in one draft
 * reached another state than the writer applying entry by entry (a review's finding, stop 44).
 * The README's determinism rule forbids such commands; replicas must agree all the same.
 */
type State = { items: Array<{ id: string; n: number }> };

/** Sloppy mode (the Function constructor's): a write into a frozen object is silent. */
const sloppyBump = new Function("item", "item.n += 1;") as (item: { n: number }) => void;

const model = defineModel({
  name: "frozen-writes",
  state: z.object({ items: z.array(z.object({ id: z.string(), n: z.number() })) }),
  initial: { items: [] } as State,
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply(d, { id }) {
        d.items.push({ id, n: 0 });
      },
    },
    bumpCaught: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        try {
          d.items[i]!.n += 1;
        } catch {
          // breaks the determinism rule on purpose
        }
      },
    },
    bumpSloppy: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        sloppyBump(d.items[i]!);
      },
    },
  },
});

const open = (log: MemoryLog) =>
  createSynchronizer({ log: log.handle(), model, compaction: false, snapshots: false });

describe("a write into what an earlier entry of a shared draft wrote", () => {
  it("gives a catch-up in one draft the state the writer reached entry by entry", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    // Awaited one by one: each entry is applied alone by the writer.
    await writer.updateUnconditionally("add", { id: "p" });
    await writer.updateUnconditionally("bumpCaught", { i: 0 });
    await writer.updateUnconditionally("bumpSloppy", { i: 0 });
    expect(writer.state.items).toEqual([{ id: "p", n: 2 }]);
    const fresh = await open(log); // catches the three entries up in one draft
    await fresh.synced();
    expect([fresh.revision, fresh.state]).toEqual([writer.revision, writer.state]);
    await Promise.all([writer.close(), fresh.close()]);
  });

  it("gives commands sharing one entry the state they reach one by one", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    await writer.updateUnconditionally("add", { id: "p" });
    // In flight together: one commands entry (format 4), applied in one draft.
    await Promise.all([
      writer.updateUnconditionally("add", { id: "q" }),
      writer.updateUnconditionally("bumpCaught", { i: 1 }),
      writer.updateUnconditionally("bumpSloppy", { i: 1 }),
    ]);
    const fresh = await open(log);
    await fresh.synced();
    for (const r of [writer, fresh]) {
      expect(r.state.items).toEqual([
        { id: "p", n: 0 },
        { id: "q", n: 2 },
      ]);
    }
    await Promise.all([writer.close(), fresh.close()]);
  });

  it("gives conditional updates queued together what each gives alone", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    // The first goes alone; the others queue behind it and the writer runs them in one draft.
    await Promise.all([
      writer.update((d) => {
        d.items.push({ id: "o", n: 0 });
      }),
      writer.update((d) => {
        d.items.push({ id: "r", n: 0 });
      }),
      writer.update((d) => {
        try {
          d.items[1]!.n += 1;
        } catch {
          // breaks the determinism rule on purpose
        }
      }),
      writer.update((d) => sloppyBump(d.items[1]!)),
    ]);
    const fresh = await open(log);
    await fresh.synced();
    for (const r of [writer, fresh]) {
      expect(r.state.items).toEqual([
        { id: "o", n: 0 },
        { id: "r", n: 2 },
      ]);
    }
    await Promise.all([writer.close(), fresh.close()]);
  });
});
