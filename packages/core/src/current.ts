import { current as immerCurrent, isDraft, type Draft } from "immer";

/**
 * The key under which a recorder's view of a draft (`TouchRecorder`) hands out the draft it
 * stands on. Not exported from the package: {@link current} reads it.
 */
export const VIEW_TARGET: unique symbol = Symbol("statesync view target");

/**
 * What `value`, a draft a command or recipe was handed or any part of one, holds now, as plain
 * data (Immer's `current`): for a command that scans a large array. Each element read through a
 * draft is handed out as a proxy (statesync records where a recipe writes, and Immer drafts what
 * it hands out), so `draft.items.find(...)` on 10,000 items makes 10,000 proxies, in every
 * command; a scan of `current(draft).items` reads plain objects. Find what you need there, then
 * write through the draft, by index or key (`draft.items[i].done = true`): what this returns is
 * frozen, the state's own objects or frozen copies, and a write into it throws (strict mode).
 * Its copies are frozen too: where several commands share a draft, a container an earlier one
 * wrote is a copy here, where alone it is the state's own; a write into it went through in one
 * and threw in the other (a catch-up and a live replica reached different states).
 *
 * It reflects every write made before the call (earlier commands in the same draft, patches
 * applied to it), unlike Immer's `original`; call it again after writing. What nothing wrote in
 * the draft is returned as it is (the state's own frozen objects), so it costs nothing on a
 * fresh draft; each array or object written since the draft began is copied (n reads for an
 * array of n elements), and so is what was put in unless it is frozen (where several updates
 * share a draft, statesync freezes what each wrote). Unlike Immer's `current`, a value that is
 * not a draft does not throw: a frozen one is returned as it is and another is copied (a part an
 * earlier update of a shared draft wrote is no draft, where the same part is one when the update
 * runs alone: both give the same data here).
 */
export function current<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  const target = ((value as Record<symbol, unknown>)[VIEW_TARGET] ?? value) as T;
  if (!isDraft(target) && Object.isFrozen(target)) return target;
  const copy = isDraft(target) ? immerCurrent(target as Draft<T>) : copyUnfrozen(target as object);
  freezeCopies(copy);
  return copy as T;
}

/**
 * Freezes the arrays and plain objects of `value` that are not frozen yet: the copies `current`
 * made (a frozen one is the state's own, or what a shared draft froze: frozen all through).
 */
function freezeCopies(value: unknown): void {
  const stack = [value];
  while (stack.length > 0) {
    const o = stack.pop();
    if (o === null || typeof o !== "object" || Object.isFrozen(o)) continue;
    const proto: unknown = Object.getPrototypeOf(o);
    if (!Array.isArray(o) && proto !== Object.prototype && proto !== null) continue;
    Object.freeze(o);
    if (Array.isArray(o)) {
      for (const v of o as unknown[]) if (typeof v === "object" && v !== null) stack.push(v);
    } else for (const k of Object.keys(o)) stack.push((o as Record<string, unknown>)[k]);
  }
}

/** A copy of `value` down to its frozen parts (which are shared), as Immer's `current` copies. */
function copyUnfrozen(value: object): unknown {
  if (Object.isFrozen(value)) return value;
  if (isDraft(value)) return immerCurrent(value);
  if (Array.isArray(value)) return value.map((v: unknown) => copyValue(v));
  const out: Record<string, unknown> = {};
  // Defined, not assigned: a key "__proto__" (JSON may hold one) stays a key.
  for (const [k, v] of Object.entries(value)) {
    Object.defineProperty(out, k, {
      value: copyValue(v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function copyValue(v: unknown): unknown {
  return v !== null && typeof v === "object" ? copyUnfrozen(v) : v;
}
