import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FilePendingStore, pendingQueueFolder } from "@statesync/node";
import { describe, expect, it } from "vitest";

/**
 * A hostile-input trial: a file in a queue folder named `<seq>.pending.json` with a seq above
 * 2^52 (even an empty one) was counted for the queue's highest seq and written into queue.json,
 * which the store's next open then refused ("not a statesync queue … remove queue.json") on
 * every open; at 2^53 - 1 no seq was left and every update failed. A name that was no safe
 * integer was ignored, and never removed, not even by clear(). Every such name is a damaged
 * record now: not counted, moved aside, reported, never blocking the queue.
 */

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const record = (seq: number) =>
  ({ format: 1, seq, kind: "update", name: "add", args: { seq }, queuedAt: 1, mv: 1 }) as const;
/** A record file as the store writes it, checksum included. */
const recordFile = (seq: number) => {
  const body = JSON.stringify(record(seq));
  return JSON.stringify({ sha256: sha256(body), body });
};

/** Odd names (each with what is in the file) and why they are no record's. */
const ODD: Array<readonly [string, string]> = [
  ["9007199254740991.pending.json", ""], // 2^53 - 1
  ["4503599627370497.pending.json", recordFile(2 ** 52 + 1)], // checksum-valid, above 2^52
  ["9007199254740993.pending.json", ""], // not a safe integer
  [`${"9".repeat(200)}.pending.json`, ""], // far above any safe integer
  ["000000000000.pending.json", recordFile(1)], // 0
  ["5.pending.json", recordFile(5)], // a seq, but not the name the store gives record 5
];

async function queueDir() {
  const dir = await mkdtemp(join(tmpdir(), "statesync-pending-names-"));
  return { dir, folder: join(dir, pendingQueueFolder("s", "worker")) };
}

describe("FilePendingStore: files named like records that are no record's", () => {
  it("are damaged: not counted for nextSeq or queue.json, moved aside, reported; the queue goes on", async () => {
    const { dir, folder } = await queueDir();
    const q = await new FilePendingStore(dir).open("s", "worker");
    await q.put(record(3));
    await q.close();
    for (const [name, text] of ODD) await writeFile(join(folder, name), text);

    const q2 = await new FilePendingStore(dir).open("s", "worker");
    const loaded = await q2.load();
    expect(loaded.records).toEqual([record(3)]);
    expect(loaded.nextSeq).toBe(4);
    expect(loaded.damaged).toHaveLength(ODD.length);
    for (const [name] of ODD) {
      const d = loaded.damaged!.find((x) => x.keptAs === join(folder, `${name}.damaged`));
      expect(d?.reason).toContain(name);
    }
    // The queue takes updates above its own seqs, and removing the highest writes queue.json.
    await q2.put(record(4));
    await q2.delete([3, 4]);
    await q2.close();
    const meta = JSON.parse(await readFile(join(folder, "queue.json"), "utf8"));
    expect(meta.highSeq).toBe(4);
    const names = await readdir(folder);
    expect(names.filter((n) => n.endsWith(".pending.json"))).toEqual([]);
    expect(names.filter((n) => n.endsWith(".damaged")).sort()).toEqual(
      ODD.map(([name]) => `${name}.damaged`).sort(),
    );

    // Reported once; the next open reads the same queue.json and finds nothing damaged.
    const q3 = await new FilePendingStore(dir).open("s", "worker");
    expect(await q3.load()).toEqual({ records: [], nextSeq: 5 });
    await q3.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("clear() takes them out of the queue too (kept aside), not counting them", async () => {
    const { dir, folder } = await queueDir();
    const q = await new FilePendingStore(dir).open("s", "worker");
    await q.put(record(2));
    for (const [name, text] of ODD) await writeFile(join(folder, name), text);
    await q.clear();
    const names = await readdir(folder);
    expect(names.filter((n) => n.endsWith(".pending.json"))).toEqual([]);
    expect(names.filter((n) => n.endsWith(".damaged"))).toHaveLength(ODD.length);
    await q.close();
    const q2 = await new FilePendingStore(dir).open("s", "worker");
    expect(await q2.load()).toEqual({ records: [], nextSeq: 3 });
    await q2.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a record of seq 2^52, the largest, is kept and counted; queue.json holding it opens", async () => {
    const { dir, folder } = await queueDir();
    const q = await new FilePendingStore(dir).open("s", "worker");
    await q.close();
    await writeFile(join(folder, `${2 ** 52}.pending.json`), recordFile(2 ** 52));
    const q2 = await new FilePendingStore(dir).open("s", "worker");
    expect(await q2.load()).toEqual({ records: [record(2 ** 52)], nextSeq: 2 ** 52 + 1 });
    await q2.delete([2 ** 52]);
    await q2.close();
    const q3 = await new FilePendingStore(dir).open("s", "worker");
    expect(await q3.load()).toEqual({ records: [], nextSeq: 2 ** 52 + 1 });
    await q3.close();
    await rm(dir, { recursive: true, force: true });
  });
});
