import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry, type Entry } from "../src/entry.js";

/** `encodeEntry`: the encoder tools outside a synchronizer use (statesync import). */
describe("encodeEntry", () => {
  // A trial: both threw a raw TypeError ("Cannot read properties of null").
  it("refuses what is no entry and no bytes with VALIDATION, naming the type", () => {
    for (const bad of [null, undefined, "x", 1]) {
      expect(() => encodeEntry(bad as never)).toThrow(
        expect.objectContaining({
          code: "VALIDATION",
          message: expect.stringMatching(/^encodeEntry: entry must be an object, not /),
        }),
      );
      expect(() => decodeEntry(bad as never)).toThrow(
        expect.objectContaining({
          code: "VALIDATION",
          message: expect.stringMatching(/^decodeEntry: data must be a Uint8Array, not /),
        }),
      );
    }
    expect(() => decodeEntry([1, 2] as never)).toThrow(/not an array/);
  });

  const hash = "a".repeat(64);

  it("encodes a snapshot entry that decodes to an equal entry", () => {
    const entry: Entry = {
      v: 1,
      kind: "snapshot",
      ts: 1,
      client: "cli",
      base: 1,
      model: "counter",
      version: 1,
      initialHash: hash,
      state: { count: 3 },
    };
    const decoded = decodeEntry(encodeEntry(entry));
    expect(decoded).toEqual({ ok: true, entry });
  });

  it("refuses with VALIDATION an entry no reader would accept", () => {
    const bad = {
      v: 1,
      kind: "update",
      ts: 1,
      client: "cli",
      base: 1,
      seed: 0,
      patches: [{ op: "add", path: ["__proto__", "x"], value: 1 }],
    } as Entry;
    expect(() => encodeEntry(bad)).toThrow(expect.objectContaining({ code: "VALIDATION" }));
    const noModel = { v: 1, kind: "genesis", ts: 1, client: "c", version: 1 } as unknown as Entry;
    expect(() => encodeEntry(noModel)).toThrow(expect.objectContaining({ code: "VALIDATION" }));
  });
});
