import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, type StateSyncError } from "@statesync/core";
import { counterModel, open } from "./fixtures.js";

/**
 * A new user's trial: the model's state schema was made stricter (same name, version and
 * initial state) and the app restarted on a compacted log. The snapshot entry its own earlier
 * build wrote was refused with `CORRUPT_ENTRY: snapshot entry is invalid: it fails the state
 * schema`, which points at a damaged log, not at the model change that needs a new version.
 * Outcome: the refusal says why the entry fails and names that remedy.
 */
const stricter = defineModel({
  name: counterModel.name,
  state: z.object({
    count: z.number().int().max(100),
    items: z.array(z.string()),
    log: z.array(z.string()),
  }),
  initial: counterModel.initial,
  commands: counterModel.commands,
});

describe("a snapshot entry that the model's (changed) schema refuses", () => {
  it("is refused with the reason and the advice to declare a new model version", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    await writer.update("increment", { by: 500 });
    await writer.compact();
    await writer.close();
    const error = await createSynchronizer({ log, model: stricter, snapshots: false }).then(
      () => undefined,
      (e: unknown) => e as StateSyncError,
    );
    expect(error?.code).toBe("CORRUPT_ENTRY");
    expect(error?.message).toContain("count");
    expect(error?.message).toMatch(/new model version/);
  });

  it("names the first few issues only, however many the state has", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    await Promise.all(
      Array.from({ length: 500 }, (_, i) => writer.update("push", { item: `item ${i}` })),
    );
    await writer.compact();
    await writer.close();
    const shortItems = defineModel({
      ...{ name: counterModel.name, initial: counterModel.initial },
      state: z.object({
        count: z.number().int(),
        items: z.array(z.string().max(2)),
        log: z.array(z.string()),
      }),
      commands: counterModel.commands,
    });
    const error = await createSynchronizer({ log, model: shortItems, snapshots: false }).then(
      () => undefined,
      (e: unknown) => e as StateSyncError,
    );
    expect(error?.code).toBe("CORRUPT_ENTRY");
    expect(error?.message).toContain("and 497 more issues");
    expect(error!.message.length).toBeLessThan(2_000);
  });

  it("an update that breaks the state in many places is refused naming the first few", async () => {
    const writer = await open(new MemoryLog());
    const error = await writer
      .update((draft) => {
        (draft as { items: unknown[] }).items = Array.from({ length: 500 }, (_, i) => i);
      })
      .then(
        () => undefined,
        (e: unknown) => e as StateSyncError,
      );
    expect(error?.code).toBe("VALIDATION");
    expect(error?.message).toContain("and 497 more issues");
    expect(error!.message.length).toBeLessThan(2_000);
    await writer.close();
  });
});
