/**
 * `import` of a state too large for one entry: written as a chunked snapshot (docs/format.md,
 * "Chunked snapshots"), as a compaction writes one, but every entry appended conditionally on
 * the one before it (an import owns its new log: a writer that gets in between makes it fail,
 * never interleave). Part 0 (empty) right after the genesis at `base`, parts 1..n with slices
 * of the state's JSON text, then the format-2 snapshot entry naming them.
 */
import { createHash } from "node:crypto";
import { encodeEntry, type JetStreamLog } from "@statesync/node";
import { restoreSnapshotHeader, type Backup } from "./backup.js";

/** Room an entry's envelope takes besides a part's data (ids, base, time), bytes. */
const ENVELOPE_BYTES = 512;

/** What a chunked restore wrote: its snapshot entry's revision and its part 0's. */
export interface ChunkedRestore {
  readonly revision: number;
  readonly start: number;
}

/**
 * The slices of `text` whose part entries fit in `maxEntryBytes`: at most a third of the room in
 * UTF-16 units (no unit takes more than 3 bytes once in the entry's JSON, escaped or not), never
 * ending between the halves of a surrogate pair.
 */
export function textSlices(text: string, maxEntryBytes: number): string[] {
  const chars = Math.max(2, Math.floor((maxEntryBytes - ENVELOPE_BYTES) / 3));
  const slices: string[] = [];
  for (let pos = 0; pos < text.length;) {
    let end = Math.min(text.length, pos + chars);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    slices.push(text.slice(pos, end));
    pos = end;
  }
  return slices;
}

/**
 * Appends part 0, the parts and the chunked snapshot entry of `backup`'s state after the genesis
 * at `base`, each conditionally on the one before (`append` maps a conflict to the caller's
 * error). `id` names the parts (letters, digits).
 */
export async function writeChunkedRestore(
  log: JetStreamLog,
  backup: Backup,
  base: number,
  client: string,
  id: string,
  append: (data: Uint8Array, after: number, messageId: string) => Promise<number>,
): Promise<ChunkedRestore> {
  const { maxEntryBytes } = await log.info();
  const text = JSON.stringify(backup.state);
  const part = (index: number, data: string) =>
    encodeEntry({ v: 1, kind: "part", ts: Date.now(), client, id, index, base, data });
  const start = await append(part(0, ""), base, `restore-part-${id}-0`);
  let last = start;
  const slices = textSlices(text, maxEntryBytes);
  for (const [i, slice] of slices.entries()) {
    last = await append(part(i + 1, slice), last, `restore-part-${id}-${i + 1}`);
  }
  const snapshot = encodeEntry({
    v: 2,
    ...restoreSnapshotHeader(backup, base, client),
    parts: {
      id,
      count: slices.length + 1,
      bytes: Buffer.byteLength(text, "utf8"),
      sha256: createHash("sha256").update(text, "utf8").digest("hex"),
    },
  });
  const revision = await append(snapshot, last, `restore-snapshot-${id}`);
  return { revision, start };
}
