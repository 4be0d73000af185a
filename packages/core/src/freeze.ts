/**
 * Deep freezing of states, at a cost proportional to what is new. Immer's automatic freezing
 * asks `Object.isFrozen` of every child of every container it copied, and for an object with
 * many keys (V8 keeps those in dictionary mode) that question walks all its properties: a state
 * of 1,000 buckets of 100 items spent most of each applied entry there, O(state) per update
 * (found by the chunked benchmark: a replica of a 100 MB state fell behind 1,000 updates a
 * second). Here the objects frozen so far are remembered in a `WeakSet`, whose lookup costs the
 * same for any object, so a new state is frozen by visiting its new containers and their direct
 * children only.
 */

const frozen = new WeakSet<object>();

/**
 * Freezes `value` and everything reachable from it that this module has not frozen before;
 * returns `value`. Iterative (no recursion on hostile depth). An object frozen elsewhere (Immer,
 * the caller) is frozen again and walked once, then remembered.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || frozen.has(value)) return value;
  const stack: object[] = [value];
  while (stack.length > 0) {
    const o = stack.pop()!;
    if (frozen.has(o)) continue;
    Object.freeze(o);
    frozen.add(o);
    if (Array.isArray(o)) {
      for (const v of o) if (typeof v === "object" && v !== null && !frozen.has(v)) stack.push(v);
    } else {
      for (const k in o) {
        const v = (o as Record<string, unknown>)[k];
        if (typeof v === "object" && v !== null && !frozen.has(v)) stack.push(v);
      }
    }
  }
  return value;
}
