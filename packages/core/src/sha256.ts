/**
 * SHA-256 (FIPS 180-4), synchronous and incremental, in any runtime: what `stateHash`, the
 * chunked snapshots' check and the browser's stored snapshots use. Written here rather than
 * taken from `@noble/hashes` because a browser bundle carried about 2.6 KiB gzipped of that
 * package's hashing framework for this one function (README, "Bundle size"); this is about
 * 0.6 KiB. Checked against Node's `crypto` in test/sha256.test.ts (every length across the
 * padding boundaries, random inputs, inputs fed in random slices).
 *
 * The round constants are the first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes, the initial hash those of the square roots of the first 8 (FIPS 180-4,
 * 4.2.2 and 5.3.3), computed once at load (doubles hold them exactly enough; the test checks
 * the digests).
 */
const K = new Int32Array(64);
const IV = new Int32Array(8);
const frac = (x: number) => ((x - Math.floor(x)) * 2 ** 32) | 0;
for (let p = 2, n = 0; n < 64; p++) {
  let prime = true;
  for (let d = 2; d * d <= p; d++) if (p % d === 0) prime = false;
  if (!prime) continue;
  if (n < 8) IV[n] = frac(Math.sqrt(p));
  K[n++] = frac(Math.cbrt(p));
}

/** The message schedule, reused by every block. */
const W = new Int32Array(64);

/** Right rotation of a 32-bit word. */
const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** Runs the compression function on the 64-byte block of `d` at `o` into `h`. */
function compress(h: Int32Array, d: Uint8Array, o: number): void {
  for (let i = 0; i < 16; i++, o += 4) {
    W[i] = (d[o]! << 24) | (d[o + 1]! << 16) | (d[o + 2]! << 8) | d[o + 3]!;
  }
  for (let i = 16; i < 64; i++) {
    const a = W[i - 15]!;
    const b = W[i - 2]!;
    const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
    const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
    W[i] = (s0 + s1 + W[i - 7]! + W[i - 16]!) | 0;
  }
  let a = h[0]!;
  let b = h[1]!;
  let c = h[2]!;
  let e = h[4]!;
  let f = h[5]!;
  let g = h[6]!;
  let dd = h[3]!;
  let hh = h[7]!;
  for (let i = 0; i < 64; i++) {
    const t1 =
      (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    hh = g;
    g = f;
    f = e;
    e = (dd + t1) | 0;
    dd = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0]! + a) | 0;
  h[1] = (h[1]! + b) | 0;
  h[2] = (h[2]! + c) | 0;
  h[3] = (h[3]! + dd) | 0;
  h[4] = (h[4]! + e) | 0;
  h[5] = (h[5]! + f) | 0;
  h[6] = (h[6]! + g) | 0;
  h[7] = (h[7]! + hh) | 0;
}

/**
 * An incremental SHA-256: `new Sha256().update(a).update(b).hex()` is the digest of the bytes of
 * `a` then `b`, as 64 lowercase hex characters. `hex()` ends it: a later `update` or `hex` throws
 * (`Error`). Inputs of any length up to 2^53 - 1 bytes in all.
 */
export class Sha256 {
  private readonly h = Int32Array.from(IV);
  private readonly block = new Uint8Array(64);
  private fill = 0;
  private length = 0;
  private done = false;

  /** Adds `data` (not kept: it may change afterwards). */
  update(data: Uint8Array): this {
    if (this.done) throw new Error("Sha256: hex() was called already");
    this.length += data.length;
    let i = 0;
    if (this.fill > 0) {
      i = Math.min(64 - this.fill, data.length);
      this.block.set(data.subarray(0, i), this.fill);
      this.fill += i;
      if (this.fill < 64) return this;
      compress(this.h, this.block, 0);
      this.fill = 0;
    }
    for (; i + 64 <= data.length; i += 64) compress(this.h, data, i);
    this.block.set(data.subarray(i));
    this.fill = data.length - i;
    return this;
  }

  /** The digest of everything added, hex. */
  hex(): string {
    if (this.done) throw new Error("Sha256: hex() was called already");
    this.done = true;
    const b = this.block;
    b[this.fill++] = 0x80;
    if (this.fill > 56) {
      b.fill(0, this.fill);
      compress(this.h, b, 0);
      this.fill = 0;
    }
    b.fill(0, this.fill, 56);
    const view = new DataView(b.buffer);
    view.setUint32(56, Math.floor(this.length / 2 ** 29));
    view.setUint32(60, (this.length % 2 ** 29) * 8);
    compress(this.h, b, 0);
    let out = "";
    for (const word of this.h) out += (word >>> 0).toString(16).padStart(8, "0");
    return out;
  }
}
