import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FilePendingStore, pendingQueueFolder } from "@statesync/node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * A damaged record file the store cannot move aside (here a directory holds the `.damaged` name)
 * stays where it is: `load()` says so (`leftInPlace`), so the report does not call it deleted or
 * kept aside, and the next load finds it again.
 */
const record = (seq: number) =>
  ({ format: 1, seq, kind: "update", name: "add", args: { seq }, queuedAt: 1, mv: 1 }) as const;

describe("FilePendingStore: a damaged record it cannot move aside", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "statesync-left-in-place-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("is handed back as left in place, and found again by the next load", async () => {
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    await q.put(record(1));
    await q.put(record(2));
    await q.close();
    const folder = join(dir, pendingQueueFolder("s", "worker"));
    const file = join(folder, "000000000002.pending.json");
    await writeFile(file, "garbage, not a record");
    await mkdir(`${file}.damaged`);
    await writeFile(join(`${file}.damaged`, "mine"), "in the way");

    for (let load = 0; load < 2; load++) {
      const q2 = await new FilePendingStore(dir).open("s", "worker");
      const loaded = await q2.load();
      expect(loaded.records).toEqual([record(1)]);
      expect(loaded.damaged).toEqual([
        { seq: 2, reason: expect.any(String) as string, leftInPlace: true },
      ]);
      await q2.close();
      expect(await readFile(file, "utf8")).toBe("garbage, not a record");
    }
  });
});
