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
  freezeWalk(value);
  return value;
}

/**
 * `deepFreeze`, returning how many member values it looked at: the cost of the walk, which for
 * a state produced from a frozen one is the size of every container the update copied (10,000
 * for one change in a record of 10,000 entities). `onHole` is called for each hole it meets in
 * a new array (an index the array does not hold: not JSON).
 */
export function freezeWalk(value: unknown, onHole?: () => void): number {
  if (typeof value !== "object" || value === null || frozen.has(value)) return 0;
  let visited = 0;
  const stack: object[] = [value];
  while (stack.length > 0) {
    const o = stack.pop()!;
    if (frozen.has(o)) continue;
    Object.freeze(o);
    frozen.add(o);
    if (Array.isArray(o)) {
      visited += o.length;
      for (let i = 0; i < o.length; i++) {
        const v: unknown = o[i];
        if (typeof v === "object" && v !== null) {
          if (!frozen.has(v)) stack.push(v);
        } else if (v === undefined && onHole && !(i in o)) onHole();
      }
    } else {
      for (const k in o) {
        visited++;
        const v = (o as Record<string, unknown>)[k];
        if (typeof v === "object" && v !== null && !frozen.has(v)) stack.push(v);
      }
    }
  }
  return visited;
}

/** The member `key` of `node` when it is an own property holding an object, else undefined. */
function member(node: object, key: string | number): object | undefined {
  if (!Object.hasOwn(node, key)) return undefined;
  const v = (node as Record<string | number, unknown>)[key];
  return typeof v === "object" && v !== null ? v : undefined;
}

/**
 * Freezes a state that Immer produced from a state frozen here, given the path of every write
 * the recipe made (sets and deletes, each as the path it was made at, the ones it undid later
 * included): the containers on each path are frozen shallowly and each written value deeply.
 * Returns `state`. The cost is the paths' length plus the size of the new values, where
 * `deepFreeze` walks every member of every copied container.
 *
 * Sound when `writes` holds every write of the recipe (see `TouchRecorder`): Immer copies a
 * container only when a write was made in it or below it (an undone write still leaves a copy,
 * and a path that does not lead to it any more means the container left the state by a write
 * that is itself listed); any other new object in the state got there as, or inside, a written
 * value, which is walked whole. Every other member of a copied container is a member of the
 * frozen state it was copied from.
 */
export function freezeAlong<T>(state: T, writes: ReadonlyArray<ReadonlyArray<string | number>>): T {
  if (typeof state !== "object" || state === null) return state;
  // The written values first, each walked whole: a container on a path is remembered as frozen
  // below, so it must not be one a written value still has to be walked through.
  for (const path of writes) {
    if (path.length === 0) return deepFreeze(state);
    let node: object | undefined = state;
    for (let i = 0; i < path.length && node !== undefined; i++) node = member(node, path[i]!);
    if (node !== undefined) freezeWalk(node);
  }
  for (const path of writes) {
    let node: object | undefined = state;
    for (let i = 0; i < path.length && node !== undefined; i++) {
      if (!frozen.has(node)) {
        Object.freeze(node);
        frozen.add(node);
      }
      node = member(node, path[i]!);
    }
  }
  return state;
}
