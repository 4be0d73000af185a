/**
 * mulberry32: a small, fast 32-bit PRNG. Deterministic for a seed, so `ctx.random()` gives the
 * same sequence on every replica. Not for cryptography.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random unsigned 32-bit seed from the platform's CSPRNG. */
export function randomSeed(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]!;
}

/** A random id of `bytes` random bytes, hex. */
export function randomId(bytes = 8): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

const seedPool = new Uint32Array(256);
let seedNext = seedPool.length;
/** A random 32-bit seed from the platform's CSPRNG, drawn 256 at a time (one draw costs ~1 µs). */
export function nextSeed(): number {
  if (seedNext === seedPool.length) {
    crypto.getRandomValues(seedPool);
    seedNext = 0;
  }
  return seedPool[seedNext++]!;
}

/**
 * The seed of a pending update's `ctx.random()` (docs/offline.md, "Context"): FNV-1a (32 bits)
 * of `origin:seq`, its identity. Fixed when the update is queued, so the optimistic view, every
 * rerun of it and the entry that commits it draw the same numbers, and two queues (random
 * origins) draw differently even for updates queued at the same millisecond.
 */
export function pendingSeed(origin: string, seq: number): number {
  const text = `${origin}:${seq}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
