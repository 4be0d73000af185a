/**
 * The chaos test's seeded pseudo-random numbers (mulberry32: 32-bit state, period 2^32): one seed
 * gives one schedule, so a failing run can be replayed with `STATESYNC_CHAOS_SEED`.
 */
export interface Prng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max] (both inclusive). */
  int(min: number, max: number): number;
  /** One key of `weights`, each drawn in proportion to its (non-negative) weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K;
}

/** A {@link Prng} from a 32-bit unsigned seed. */
export function prng(seed: number): Prng {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    weighted(weights) {
      const entries = Object.entries(weights) as Array<[keyof typeof weights, number]>;
      const total = entries.reduce((n, [, w]) => n + w, 0);
      let r = next() * total;
      for (const [k, w] of entries) {
        r -= w;
        if (r < 0) return k;
      }
      return entries.at(-1)![0];
    },
  };
}
