/**
 * Where two JSON values first differ, for `verify`'s report: the path (`/items/3/done`) and the
 * two values there. Keys are compared in sorted order, so the first difference is stable.
 */
import { canonicalJson } from "@statesync/node";

/** The first place `a` and `b` differ, or undefined when they are equal (as canonical JSON). */
export function firstDifference(
  a: unknown,
  b: unknown,
  path: string = "",
): { path: string; a: unknown; b: unknown } | undefined {
  // A key (or element) on one side only: the difference is here (canonicalJson refuses
  // undefined; a fresh-eyes trial: a snapshot entry without a key the replay had read
  // "STOPS ... not a JSON value" instead of the divergence).
  if (a === undefined || b === undefined) {
    return a === b ? undefined : { path: path || "/", a, b };
  }
  if (canonicalJson(a) === canonicalJson(b)) return undefined;
  const bothArrays = Array.isArray(a) && Array.isArray(b);
  const bothObjects =
    typeof a === "object" &&
    typeof b === "object" &&
    a !== null &&
    b !== null &&
    !Array.isArray(a) &&
    !Array.isArray(b);
  if (bothArrays) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}/${i}`);
      if (d) return d;
    }
  } else if (bothObjects) {
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort();
    for (const k of keys) {
      const d = firstDifference(ra[k], rb[k], `${path}/${k}`);
      if (d) return d;
    }
  }
  return { path: path || "/", a, b };
}
