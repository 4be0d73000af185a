import { describe, expect, it } from "vitest";
import type { LogEntry } from "../src/log.js";
import { Replay } from "../src/replay.js";
import { bytes, chunkedTexts as chunked, incText, tinyModel } from "./engine-fixtures.js";

/**
 * The shared layout (revisions of other keys in between, so a truncation shows no revision gap):
 * a cold-starting read that a truncation overtakes while it collects chunked snapshots. Found by
 * a fresh-eyes trial with two compactors and a paused reader (s3, s4), on both servers.
 */

const at = (revision: number, text: string): LogEntry => ({ revision, data: bytes(text) });

function coldReplay(): Replay<{ n: number }, (typeof tinyModel)["commands"]> {
  const replay = new Replay(tinyModel, false);
  replay.scanForStart = true;
  return replay;
}

describe("chunked snapshots in the shared layout, a truncation overtaking the read", () => {
  it("loads the later snapshot whose part 0 came while another's parts were held", () => {
    // X's parts at 10..13 are read; the entries up to 17 (other writes) are truncated away by
    // B's compaction before the read goes on; B's parts at 18..21 (base 17), X's snapshot entry
    // at 22, B's at 23. Before, B's parts were assembled again from the envelopes held without
    // their data: "its parts hold 0 bytes", CORRUPT_ENTRY, and the replica stopped TRUNCATED.
    const replay = coldReplay();
    const x = chunked("x", 9, 5);
    const b = chunked("b", 17, 40);
    const read = [
      ...x.slice(0, 4).map((t, i) => at(10 + i, t)),
      ...b.slice(0, 4).map((t, i) => at(18 + i, t)),
      at(22, x[4]!),
      at(23, b[4]!),
      at(24, incText),
    ];
    const results = replay.stepMany(read);
    const errors = results.flatMap((r) => ("error" in r && r.error ? [r.error.code] : []));
    expect(errors).toEqual([]);
    expect(replay.anchored).toBe(true);
    expect(replay.state).toEqual({ n: 41 });
    expect(replay.revision).toBe(24);
  });

  it("passes over a snapshot whose later parts a truncation removed, without CORRUPT_ENTRY", () => {
    // X's parts 0 and 1 are read (10, 11); a truncation removes 12..19, X's part 2 among them;
    // its part 3 at 20 and snapshot entry at 21 follow, then K complete at 22..26. Before: a
    // CORRUPT_ENTRY event "part 3 came where part 2 was expected" for a log that is fine.
    const replay = coldReplay();
    const x = chunked("x", 9, 5);
    const k = chunked("k", 21, 7);
    const read = [
      at(10, x[0]!),
      at(11, x[1]!),
      at(20, x[3]!),
      at(21, x[4]!),
      ...k.map((t, i) => at(22 + i, t)),
      at(27, incText),
    ];
    const results = replay.stepMany(read);
    const errors = results.flatMap((r) => ("error" in r && r.error ? [r.error.message] : []));
    expect(errors).toEqual([]);
    expect(replay.state).toEqual({ n: 8 });
    expect(replay.revision).toBe(27);
  });

  it("passes over a snapshot whose last parts a truncation removed (no later part shows it)", () => {
    // A review: X's parts 0, 1 read (10, 11); K's part 0 (14, base 13) landed before X's entry;
    // K's compaction truncated 12..13 (X's parts 2, 3); X's snapshot entry at 18, K's at 19.
    // Before: CORRUPT_ENTRY "2 of its 4 parts are in the log" for a sound log.
    const x = chunked("x", 9, 5);
    const k = chunked("k", 13, 7);
    const read = [
      at(10, x[0]!),
      at(11, x[1]!),
      ...k.slice(0, 4).map((t, i) => at(14 + i, t)),
      at(18, x[4]!),
      at(19, k[4]!),
      at(20, incText),
    ];
    const replay = coldReplay();
    const results = replay.stepMany(read);
    expect(replay.state).toEqual({ n: 8 });
    expect(results.flatMap((r) => ("error" in r && r.error ? [r.error.message] : []))).toEqual([]);
  });

  it("still reports parts out of order in one snapshot as CORRUPT_ENTRY (own stream)", () => {
    const replay = new Replay(tinyModel, true);
    const x = chunked("x", 9, 5);
    const results = replay.stepMany([at(10, x[0]!), at(11, x[1]!), at(12, x[3]!), at(13, x[4]!)]);
    expect(results.at(-1)).toMatchObject({ kind: "pending", error: { code: "CORRUPT_ENTRY" } });
  });
});
