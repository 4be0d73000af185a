import { describe, expect, it } from "vitest";
import { z } from "zod";
import { OwnLookup } from "../src/engine/own-lookup.js";
import type { RecentEntry } from "../src/entry-types.js";
import { MemoryLog } from "../src/memory-log.js";
import { defineModel } from "../src/model.js";
import { usableRecent } from "../src/recent-ids.js";
import { Replay } from "../src/replay.js";
import { compact, nobody, snapshotEntry } from "./support/compactions.js";

/**
 * A snapshot entry's `recent` list names the message ids of the entries before it; a writer
 * whose acknowledgement was lost looks its own id up there once the log is truncated. A list
 * that names an id at a revision after the snapshot's base (the log never held it there), or
 * out of order, was believed: the writer took its update as stored at a revision where the log
 * holds none (a lost update), or as absent from a list read as ordered (a second append).
 */
describe("a starting point's recent list that cannot be believed", () => {
  it("keeps a list as Replay writes it and refuses one that is out of order or past its base", () => {
    const good: RecentEntry[] = [
      ["a", 1, 0],
      ["b", 3, 0],
    ];
    expect(usableRecent(good, 3)).toBe(good);
    expect(usableRecent(undefined, 3)).toEqual([]);
    expect(usableRecent([["a", 4, 0]], 3)).toEqual([]);
    expect(usableRecent([["a", 0, 0]], 3)).toEqual([]);
    expect(
      usableRecent(
        [
          ["b", 3, 0],
          ["a", 1, 0],
        ],
        3,
      ),
    ).toEqual([]);
    expect(
      usableRecent(
        [
          ["a", 2, 0],
          ["b", 2, 0],
        ],
        3,
      ),
    ).toEqual([]);
  });

  it("does not find an own entry at a revision past the snapshot's base", async () => {
    const log = new MemoryLog();
    log.injectRaw("first");
    // The writer sent "mine-id" on revision 1 and lost the acknowledgement; nothing was stored.
    log.injectRaw("second");
    log.injectRaw("third");
    await compact(log, [["mine-id", 1_000_000, 0]]);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 1, "range");
    expect(seen.kind).not.toBe("found");
    const next = await new OwnLookup(log, nobody).locate("mine-id", 1, "next");
    expect(next.kind).not.toBe("found");
  });

  it("says unknown when the list names the id at or before the position looked from", async () => {
    const log = new MemoryLog();
    log.injectRaw("first");
    log.injectRaw("second");
    log.injectRaw("third");
    await compact(log, [["mine-id", 1, 0]]);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 2, "next");
    expect(seen.kind).toBe("unknown");
  });

  it("a replica that starts from such an entry records none of its ids", () => {
    const model = defineModel({ name: "m", state: z.object({}), initial: {}, commands: {} });
    const replay = new Replay(model, true);
    const hash = model.initialHash;
    const entry = { revision: 5, data: snapshotEntry(4, [["victim-id", 9, 0]], hash) };
    expect(replay.step(entry).kind).toBe("applied");
    expect(replay.recentRevisionOf("victim-id")).toBeUndefined();
    // An honest list is recorded as before.
    const honest = new Replay(model, true);
    honest.step({ revision: 5, data: snapshotEntry(4, [["mine-id", 3, 0]], hash) });
    expect(honest.recentRevisionOf("mine-id")).toBe(3);
  });
});
