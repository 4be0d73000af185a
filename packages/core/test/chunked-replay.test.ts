import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonNestingDepth } from "../src/entry.js";
import type { LogEntry } from "../src/log.js";
import { Replay } from "../src/replay.js";
import { bytes, chunkedTexts as chunked, incText, tinyModel } from "./engine-fixtures.js";

const at = (revision: number, text: string): LogEntry => ({ revision, data: bytes(text) });

describe("Replay with chunked snapshots", () => {
  it("starts over when a truncation overtakes a read that was collecting", () => {
    const replay = new Replay(tinyModel, true);
    const x = chunked("x", 9, 5); // parts at 10..13, its snapshot entry never read
    const k = chunked("k", 19, 7); // parts at 20..23, snapshot entry at 24
    const read = [
      at(10, x[0]!),
      at(11, x[1]!),
      // a truncation before 20 happened here: 12..19 are gone
      ...k.map((t, i) => at(20 + i, t)),
      at(25, incText),
    ];
    const results = replay.stepMany(read);
    expect(results.slice(0, 6).map((r) => r.kind)).toEqual(Array(6).fill("pending"));
    expect(results[6]!.kind).toBe("applied"); // the snapshot entry at 24
    expect(replay.revision).toBe(25);
    expect(replay.state).toEqual({ n: 8 });
    expect(replay.lastStart).toBe(20);
  });

  it("replays the entries held between the parts onto the loaded state", () => {
    const replay = new Replay(tinyModel, true);
    const k = chunked("k", 4, 10, 2); // part 0 at 5, part 1 at 6, an inc at 7, part 2 at 8, Z at 9
    const results = replay.stepMany([
      at(5, k[0]!),
      at(6, k[1]!),
      at(7, incText),
      at(8, k[2]!),
      at(9, k[3]!),
    ]);
    expect(results.at(-1)).toMatchObject({ kind: "applied", replayed: expect.any(Array) });
    expect(replay.state).toEqual({ n: 11 });
    expect(replay.revision).toBe(9);
    expect(replay.readPosition).toBe(9);
  });

  it("refuses parts whose part 0 does not follow their base (CORRUPT_ENTRY), and keeps waiting", () => {
    const replay = new Replay(tinyModel, true);
    const bad = chunked("b", 3, 99); // says base 3, but part 0 is at 10
    const results = replay.stepMany(bad.map((t, i) => at(10 + i, t)));
    expect(results.at(-1)).toMatchObject({ kind: "pending", error: { code: "CORRUPT_ENTRY" } });
    expect(replay.anchored).toBe(false);
    expect(replay.revision).toBe(0);
  });

  it("jsonNestingDepth agrees with a character-by-character scan", () => {
    const reference = (text: string, limit: number) => {
      let depth = 0;
      let max = 0;
      let inString = false;
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (inString) {
          if (c === "\\") i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === "[" || c === "{") {
          depth++;
          if (depth > max) {
            max = depth;
            if (max > limit) return -1;
          }
        } else if (c === "]" || c === "}") depth--;
      }
      return max;
    };
    const chars = fc.constantFrom('"', "\\", "[", "]", "{", "}", "a", ",");
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 40 }), fc.nat(5), (cs, limit) => {
        const text = cs.join("");
        expect(jsonNestingDepth(text, limit)).toBe(reference(text, limit));
      }),
      { numRuns: 2_000 },
    );
  });
});
