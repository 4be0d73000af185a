// The SDK's SHA-256 against Node's crypto: every length across the padding boundaries (55, 56,
// 63, 64, ... bytes), random inputs, and inputs fed in random slices.
import { createHash } from "node:crypto";
import fc from "fast-check";
import { expect, it } from "vitest";
import { Sha256 } from "../src/sha256.js";

const node = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
const bytes = (n: number, seed: number) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

it("matches the FIPS 180-4 examples", () => {
  const text = (s: string) => new Sha256().update(new TextEncoder().encode(s)).hex();
  expect(text("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect(text("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect(text("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

it("matches Node's crypto for every length from 0 to 300 bytes", () => {
  for (let n = 0; n <= 300; n++) {
    const data = bytes(n, n);
    expect(new Sha256().update(data).hex(), `length ${n}`).toBe(node(data));
  }
});

it("matches Node's crypto on random inputs fed in random slices", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 2_000 }),
      fc.array(fc.nat({ max: 300 }), { maxLength: 20 }),
      (data, cuts) => {
        const hash = new Sha256();
        let at = 0;
        for (const cut of cuts) {
          hash.update(data.subarray(at, Math.min(data.length, at + cut)));
          at = Math.min(data.length, at + cut);
        }
        hash.update(data.subarray(at));
        expect(hash.hex()).toBe(node(data));
      },
    ),
    { numRuns: 300 },
  );
});

it("matches Node's crypto on a large input (1 MiB and a few bytes)", () => {
  const data = bytes(1_048_576 + 13, 7);
  expect(new Sha256().update(data).hex()).toBe(node(data));
});

it("refuses to go on after hex()", () => {
  const hash = new Sha256().update(bytes(10, 1));
  hash.hex();
  expect(() => hash.hex()).toThrow(/already/);
  expect(() => hash.update(bytes(1, 1))).toThrow(/already/);
});
