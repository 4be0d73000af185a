import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RecentIds } from "../src/recent-ids.js";

describe("RecentIds", () => {
  it("answers as a list of every recorded entry, trimmed to the newest `capacity`", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d", "e"), fc.nat(1e13)), {
          maxLength: 60,
        }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 1, max: 24 }),
        (capacity, ids, count, initial) => {
          // `initial` below `capacity`: the ring grows while entries arrive, then wraps.
          const ring = new RecentIds(capacity, initial);
          const list: Array<[string, number, number]> = [];
          ids.forEach(([id, ts], i) => {
            ring.push(id, i + 1, ts);
            list.push([id, i + 1, ts]);
          });
          const kept = list.slice(-capacity);
          // Every entry from the oldest kept on is recorded, none before.
          expect(ring.recordedFrom).toBe(kept[0]?.[1] ?? Infinity);
          expect(ring.last(count)).toEqual(count === 0 ? [] : kept.slice(-count));
          for (const id of ["a", "b", "c", "d", "e"]) {
            const hit = kept.filter((r) => r[0] === id).at(-1);
            expect(ring.revisionOf(id)).toBe(hit?.[1]);
          }
          ring.clear();
          expect(ring.recordedFrom).toBe(Infinity);
          expect(ring.last(capacity)).toEqual([]);
          expect(ring.revisionOf("a")).toBeUndefined();
          // After a clear it starts small again and answers alike.
          ids.forEach(([id, ts], i) => ring.push(id, i + 1, ts));
          expect(ring.last(capacity)).toEqual(kept);
        },
      ),
    );
  });

  it("counts entries of a starting point's list as known, not as recorded from", () => {
    const ring = new RecentIds(8);
    ring.push("a", 3, 0, false); // a snapshot entry's list: entries before it may be unnamed
    ring.push("b", 7, 0, false);
    expect(ring.revisionOf("a")).toBe(3);
    expect(ring.recordedFrom).toBe(Infinity);
    ring.push("c", 12, 0); // the first entry consumed after the jump
    expect(ring.recordedFrom).toBe(12);
    ring.push("d", 13, 0);
    expect(ring.recordedFrom).toBe(12);
  });
});
