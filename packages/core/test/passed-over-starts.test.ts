import { describe, expect, it } from "vitest";
import { OwnEntries } from "../src/engine/own-entries.js";
import { Replica } from "../src/engine/replica.js";
import { emptyStats, StatusHub } from "../src/engine/status.js";
import {
  bytes,
  chunkedTexts,
  genesisText,
  incText,
  snapshotText,
  tinyModel as model,
} from "./engine-fixtures.js";

/**
 * Which entries a replica passed over without applying them, for its commands in flight (their
 * callers resolve `applied: false` then: bf8df83). Every starting point a replica jumps onto past
 * entries it did not apply counts: a snapshot or switch entry (from its base), and in the shared
 * layout a genesis entry the key starts again from after an operator purged it (found in review:
 * a command whose entry the purge removed resolved as applied by a replica that never saw it).
 */
const at = (revision: number, text: string) => ({ revision, data: bytes(text) });

function replicaOf(contiguous: boolean) {
  const replica = new Replica(model, contiguous, new StatusHub(), emptyStats(), new OwnEntries());
  replica.consume([at(contiguous ? 1 : 2, genesisText)]);
  return replica;
}

describe("entries a replica passed over", () => {
  it("a snapshot entry after a truncation: the entries up to its base", () => {
    const replica = replicaOf(true);
    replica.consume([at(2, incText)]);
    const release = replica.watchFailures();
    replica.consume([at(6, snapshotText(5, 4)), at(7, incText)]);
    expect(replica.revision).toBe(7);
    expect([2, 3, 5, 6, 7].map((r) => replica.passedOver(r))).toEqual([
      false,
      true,
      true,
      false,
      false,
    ]);
    release();
    expect(replica.passedOver(3)).toBe(false); // nothing in flight: forgotten
  });

  it("a chunked snapshot loaded from its parts: up to its base, not the entries replayed", () => {
    const replica = replicaOf(true);
    replica.consume([at(2, incText)]);
    const release = replica.watchFailures();
    // Entries 3..5 truncated; parts at 6..9 (base 5), a command at 10, the snapshot entry at 11.
    const [p0, p1, p2, p3, entry] = chunkedTexts("c", 5, 4);
    replica.consume([p0, p1, p2, p3].map((t, i) => at(6 + i, t!)));
    replica.consume([at(10, incText), at(11, entry!)]);
    expect(replica.revision).toBe(11);
    expect(replica.state).toEqual({ n: 5 });
    expect([3, 5, 10, 11].map((r) => replica.passedOver(r))).toEqual([true, true, false, false]);
    release();
  });

  it("a genesis entry the key starts again from (shared layout): every entry before it", () => {
    const replica = replicaOf(false);
    replica.consume([at(4, incText)]);
    const release = replica.watchFailures();
    replica.consume([at(9, genesisText)]); // the key's entries 5..8 purged
    expect(replica.revision).toBe(9);
    expect([4, 6, 8, 9].map((r) => replica.passedOver(r))).toEqual([false, true, true, false]);
    release();
  });
});
