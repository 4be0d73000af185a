import { isDraft, type Patch } from "immer";
import type { Touch } from "./touch-recorder.js";

/*
 * What a recipe wrote in a draft, read back for the checks (`withValues`), and frozen where
 * several recipes share the draft (`freezeWritten`): the values side of `TouchRecorder`.
 */

/**
 * Freezes a value a recipe wrote into a shared draft, so the next recipe of the batch gets a
 * copy (or a refused write, then that recipe runs alone) when it changes it, as it would with a
 * draft of its own: Immer hands out new objects of a draft as they are. Returns false, freezing
 * nothing, when a draft sits inside (then the batch ends after this recipe: `aliased`).
 */
export function freezeWritten(value: unknown): boolean {
  const found: object[] = [];
  const walk = (v: unknown): boolean => {
    if (v === null || typeof v !== "object") return true;
    if (isDraft(v)) return false;
    if (Object.isFrozen(v)) return true;
    found.push(v);
    for (const k of Object.keys(v)) if (!walk((v as Record<string, unknown>)[k])) return false;
    return true;
  };
  if (!walk(value)) return false;
  for (const o of found) Object.freeze(o);
  return true;
}

/**
 * The touches of one recipe as patches the checker reads: the last touch of a path wins, its
 * value read from the draft; a path whose container is gone was removed with it (that removal is
 * a touch of its own) and a key is removed when it is no longer there. An array has no removed index
 * below its length: there the value is read, a hole as `undefined` (which no schema of a JSON
 * value takes, and the JSON check refuses), and an array that grew past what was written to it
 * (`holes`) gives its first hole, if one is left, the same way.
 */
export function withValues(root: unknown, touches: readonly Touch[]): Patch[] {
  if (touches.length === 1) {
    // One write: what it wrote is what is there (nothing wrote after it).
    const t = touches[0]!;
    if (t.written && t.op === "replace") {
      return [{ op: "replace", path: t.path as Patch["path"], value: t.written.value }];
    }
    return withValue(root, t, []);
  }
  const last = new Map<string, Touch>();
  for (const t of touches) {
    // An array's `holes` is not a write of the array: a value written there is checked too.
    const key = t.holes ? `${t.path.join("\u0000")}\u0000\u0001holes` : t.path.join("\u0000");
    const before = last.get(key);
    last.delete(key);
    // Holes may be left from the earliest growth of the array on: scan from there.
    const from = before?.holes ? Math.min(before.from ?? 0, t.from ?? 0) : t.from;
    last.set(key, t.holes && from !== t.from ? { ...t, from } : t);
  }
  const out: Patch[] = [];
  for (const t of last.values()) withValue(root, t, out);
  return out;
}

/** One touch of {@link withValues}, pushed to `out` (unless its container is gone). */
function withValue(root: unknown, t: Touch, out: Patch[]): Patch[] {
  let node = root as Record<string | number, unknown> | undefined;
  const path = t.path;
  const end = t.holes ? path.length : path.length - 1;
  for (let i = 0; i < end && node !== undefined; i++) {
    const v = node[path[i]!];
    node =
      v !== null && typeof v === "object" ? (v as Record<string | number, unknown>) : undefined;
  }
  if (node === undefined) return out;
  if (t.holes) {
    if (!Array.isArray(node)) return out; // replaced since: by a write that is a touch of its own
    const hole = firstHole(node, t.from ?? 0);
    if (hole !== undefined) out.push({ op: "replace", path: [...path, hole], value: undefined });
    return out;
  }
  const k = path[path.length - 1]!;
  if (Array.isArray(node) && typeof k === "number" && k < node.length) {
    out.push({ op: "replace", path: [...path], value: node[k] });
  } else if (!Object.hasOwn(node, k)) {
    // (Not the touch's op: a key removed, then written again with its container, is there.)
    out.push({ op: "remove", path: [...path] });
  } else out.push({ op: "replace", path: [...path], value: node[k] });
  return out;
}

/** The first index from `from` on that `array` does not hold, or undefined. */
export function firstHole(array: readonly unknown[], from: number): number | undefined {
  for (let i = from; i < array.length; i++) if (!(i in array)) return i;
  return undefined;
}
