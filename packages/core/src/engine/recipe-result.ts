/**
 * A recipe's return value as its caller gets it (`update()`'s `result`): drafts in it, returned
 * or nested in plain objects and arrays the recipe built (`({ first: d.items[0] })`), become
 * plain copies of what they held when the recipe returned. Immer revokes its drafts once
 * `produce` returns, so a nested one read afterwards threw `Cannot perform 'get' on a proxy that
 * has been revoked` (a new user's trial); a returned draft itself was already copied.
 */
import { current, isDraft } from "immer";

/** What maps a recipe's view of a draft to the draft (`TouchRecorder`). */
export interface Views {
  unwrap<T>(value: T): T;
}

/** Containers deeper than this are handed over as they are (a result is no state to check). */
const MAX_RESULT_DEPTH = 256;

/**
 * `value` with every draft in it replaced by `current(draft)`; `views.unwrap` maps a recipe's view
 * of a draft (the touch recorder's) to the draft. Plain objects and arrays holding a draft are
 * copied (shallowly, along the way to it); everything else, and any container without a draft,
 * is returned as it is (the same object). Call it inside the recipe's `produce`.
 */
export function detachResult(value: unknown, views: Views): unknown {
  return detach(value, views, new Set(), 0);
}

function detach(value: unknown, views: Views, seen: Set<object>, depth: number): unknown {
  if (value === null || typeof value !== "object") return value;
  const v = views.unwrap(value);
  if (isDraft(v)) return current(v);
  if (depth >= MAX_RESULT_DEPTH || seen.has(v)) return v;
  const array = Array.isArray(v);
  const proto: unknown = Object.getPrototypeOf(v);
  if (!array && proto !== Object.prototype && proto !== null) return v; // a Map, a class: as is
  seen.add(v);
  let copy: Record<string, unknown> | unknown[] | undefined;
  for (const key of Object.keys(v)) {
    const item = (v as Record<string, unknown>)[key];
    const plain = detach(item, views, seen, depth + 1);
    if (plain === item) continue;
    copy ??= array ? (v as unknown[]).slice() : { ...(v as Record<string, unknown>) };
    (copy as Record<string, unknown>)[key] = plain;
  }
  seen.delete(v);
  return copy ?? v;
}
