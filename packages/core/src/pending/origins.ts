/**
 * The table of applied origins (docs/offline.md, docs/format.md "origin"): for each origin (the
 * identity of a pending queue's session, docs/offline.md "Identity") the highest `seq` an applied
 * entry carried, and the revision of that entry. Part of every replica's deterministic state:
 * replicas that consumed the same entries hold the same table, and snapshot entries, switch
 * entries and local snapshots carry it.
 *
 * Invariants:
 * 1. An entry with `origin [o, s]` is a duplicate when the table holds `o` with a seq >= `s`: it
 *    is consumed without effect. Only one session ever queues updates under an origin (each
 *    draws its own at open), and it pushes them in seq order, each only once the one before is
 *    known committed, so a smaller seq arriving later is always a re-send (or a copied storage's
 *    record: the same update).
 * 2. Bounded by count, never by a clock: at most {@link MAX_ORIGINS} origins, the one applied
 *    least recently (by revision) forgotten first. Every replica evicts the same one.
 */

import type { EntryOrigin, OriginRow } from "../entry-types.js";

export type { OriginRow };

/** Origins a table keeps. */
export const MAX_ORIGINS = 2_000;

export class Origins {
  /** origin → [seq, revision], in order of last application (oldest first). */
  private readonly rows = new Map<string, [number, number]>();

  constructor(rows: ReadonlyArray<readonly [string, number, number]> = []) {
    for (const [origin, seq, revision] of rows) this.rows.set(origin, [seq, revision]);
  }

  /** The highest seq applied for `origin` and the revision of its entry, if known. */
  get(origin: string): { seq: number; revision: number } | undefined {
    const row = this.rows.get(origin);
    return row && { seq: row[0], revision: row[1] };
  }

  /** Whether an entry with `origin` (`[origin, seq]`) was applied already (invariant 1). */
  isDuplicate(origin: EntryOrigin | undefined): boolean {
    if (origin === undefined) return false;
    const row = this.rows.get(origin[0]);
    return row !== undefined && row[0] >= origin[1];
  }

  /** Records that the entry at `revision` with `origin` was consumed. */
  note(origin: EntryOrigin | undefined, revision: number): void {
    if (origin === undefined) return;
    this.rows.delete(origin[0]);
    this.rows.set(origin[0], [origin[1], revision]);
    if (this.rows.size > MAX_ORIGINS) this.rows.delete(this.rows.keys().next().value as string);
  }

  /** The table as rows, oldest first (what snapshots carry). */
  toRows(): OriginRow[] {
    return [...this.rows].map(([origin, [seq, revision]]) => [origin, seq, revision]);
  }

  get size(): number {
    return this.rows.size;
  }
}
