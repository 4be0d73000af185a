import { encodeEntry } from "../../src/entry.js";
import type { RecentEntry } from "../../src/entry-types.js";
import type { MemoryLog } from "../../src/memory-log.js";

/** The replica of an `OwnLookup` that recorded nothing of its own (no recent ids, no revision). */
export const nobody = { revision: 0, recordedFrom: Infinity, recentRevisionOf: () => undefined };

/** The bytes of another replica's snapshot entry based on `base`, its `recent` list as given. */
export const snapshotEntry = (base: number, recent: RecentEntry[], initialHash = "0".repeat(64)) =>
  encodeEntry({
    v: 1,
    kind: "snapshot",
    ts: 1,
    client: "other",
    base,
    model: "m",
    version: 1,
    initialHash,
    state: {},
    recent,
  });

/**
 * A compaction by another replica (honest, hostile or broken): a snapshot entry at the tail
 * recording `recent`, then the truncation before it. Returns the snapshot's revision.
 */
export async function compact(log: MemoryLog, recent: RecentEntry[]): Promise<number> {
  const base = (await log.info()).latestRevision;
  const { revision } = await log.appendUnconditional(
    snapshotEntry(base, recent),
    `snapshot-${base}`,
  );
  await log.truncateBefore(revision);
  return revision;
}
