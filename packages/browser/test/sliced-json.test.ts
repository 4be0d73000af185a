// The sliced JSON encoder and the snapshot codec built on it (issue 10, case 9): the same text
// as JSON.stringify, the same checksum as hashing that text at once, and a turn of the event
// loop in the middle of a large value.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { encodeJsonInSlices, jsonChunks, yieldToEventLoop } from "../src/sliced-json.js";
import { decodeSnapshot, encodeSnapshot } from "../src/snapshot-codec.js";

/** A state of about `entities` records of a few fields, with non-BMP text in it. */
function bigState(entities: number) {
  const byId: Record<string, unknown> = {};
  for (let i = 0; i < entities; i++) {
    byId[`e${i}`] = {
      id: i,
      title: `card ${i} 🎉 ${"x".repeat(i % 50)}`,
      tags: ["a", "b"],
      done: i % 3 === 0,
    };
  }
  return {
    byId,
    order: Object.keys(byId),
    nested: { deep: { list: Array.from({ length: 5000 }, (_, i) => [i, { i }]) } },
  };
}

const samples: Array<[string, unknown]> = [
  ["a number", 42],
  ["a string with quotes and a pair", 'say "hi" 😀 \u2028'],
  ["null", null],
  ["an empty object and array", { a: {}, b: [] }],
  ["undefined members and items", { a: undefined, b: [undefined, () => 1, Symbol("s")], c: 1 }],
  ["toJSON (a Date)", { when: new Date(0), items: [new Date(1)] }],
  ["integer-like keys", { b: 1, 2: "two", a: 3, 1: "one" }],
  ["a large state", bigState(20_000)],
  ["a large array of large objects", Array.from({ length: 3 }, () => bigState(3_000))],
  ["a single huge string", { text: "é".repeat(300_000) + "😀".repeat(100_000) }],
];

describe("jsonChunks", () => {
  it.each(samples)("gives the text of JSON.stringify for %s", (_, value) => {
    expect([...jsonChunks(value)].join("")).toBe(JSON.stringify(value));
  });

  it("gives null for a top-level value JSON.stringify leaves out, and throws what it throws", () => {
    expect([...jsonChunks(undefined)].join("")).toBe("null");
    expect(() => [...jsonChunks({ n: 1n })]).toThrow(TypeError);
    const cycle: Record<string, unknown> = { byId: bigState(3_000) };
    (cycle.byId as Record<string, unknown>).self = cycle;
    expect(() => [...jsonChunks(cycle)]).toThrow();
  });

  it("opens a large value into many chunks, each whole JSON", () => {
    const chunks = [...jsonChunks(bigState(20_000))];
    expect(chunks.length).toBeGreaterThan(100);
  });
});

describe("encodeJsonInSlices", () => {
  it("lets other tasks run while it encodes a large value, and hands over all of its text", async () => {
    const order: string[] = [];
    const pieces: string[] = [];
    const value = bigState(40_000);
    const encoding = encodeJsonInSlices(value, (t) => pieces.push(t), { sliceMs: 1 }).then(
      (text) => {
        order.push("encoded");
        return text;
      },
    );
    // A task queued after the encoding started runs before it ends: the encoding yielded.
    void yieldToEventLoop().then(() => order.push("other task"));
    const text = await encoding;
    expect(order).toEqual(["other task", "encoded"]);
    expect(text).toBe(JSON.stringify(value));
    expect(pieces.join("")).toBe(text);
    expect(pieces.length).toBeGreaterThan(1);
  });
});

describe("snapshot codec", () => {
  const record = (state: unknown) => ({
    format: 1 as const,
    revision: 7,
    state,
    logIdentity: "log-1",
    messageId: "m-7",
    model: "board",
    modelVersion: 1,
    savedAt: 1_700_000_000_000,
  });

  it("checksums the body as hashing its UTF-8 at once would, and decodes it back", async () => {
    // Non-BMP characters placed across every 64 K boundary of the checksum's pieces.
    const text = "😀".repeat(200_000);
    for (const state of [{ text }, { text: `a${text}` }, bigState(10_000)]) {
      const stored = await encodeSnapshot(record(state));
      expect(stored.body).toBe(JSON.stringify(record(state)));
      expect(stored.sha256).toBe(bytesToHex(sha256(new TextEncoder().encode(stored.body))));
      expect(await decodeSnapshot("k", stored)).toEqual(record(state));
    }
  });
});
