import { isDraft, type Immer, type Patch } from "immer";

/** An array index as a patch path holds it: a number, or its decimal text. */
function indexOf(key: unknown): number | undefined {
  if (typeof key === "number") return Number.isSafeInteger(key) && key >= 0 ? key : undefined;
  return typeof key === "string" && /^(0|[1-9]\d{0,15})$/.test(key) ? Number(key) : undefined;
}

/**
 * Why `patch` may not be applied to `root` (a state or an Immer draft of one), or undefined when it
 * may. Checks only patches whose parent container is an array: they must address an element
 * that exists (`replace`, `remove`: index below the length) or the end (`add`: index at most the
 * length, or `-`). Immer writes any other key of an array as it is, so one hostile entry of a few
 * bytes (`replace` of `["items", "length"]` with 4294967295, or of `["items", 1e9]`) made every
 * replica's array huge and sparse: the freeze walk and `JSON.stringify` then ran for minutes or
 * ran out of memory (a fresh-eyes trial). Patches Immer produces never do this.
 */
export function arrayPatchProblem(root: unknown, patch: Patch): string | undefined {
  const { path } = patch;
  if (path.length === 0) return undefined;
  let parent: unknown = root;
  for (let i = 0; i < path.length - 1; i++) {
    if (typeof parent !== "object" || parent === null) return undefined; // Immer refuses it
    parent = (parent as Record<string | number, unknown>)[path[i]!];
  }
  if (!Array.isArray(parent)) return undefined;
  return elementProblem(parent.length, patch);
}

/** {@link arrayPatchProblem} of `patch`, whose parent is an array of `length` elements. */
function elementProblem(length: number, patch: Patch): string | undefined {
  const { path } = patch;
  const key = path[path.length - 1];
  if (patch.op === "add" && key === "-") return undefined;
  const index = indexOf(key);
  if (index === undefined)
    return `path ${JSON.stringify(path)}: an array has no key ${JSON.stringify(key)}`;
  if (patch.op === "add" ? index > length : index >= length) {
    return `path ${JSON.stringify(path)}: index ${index} is past the array's end (length ${length})`;
  }
  return undefined;
}

/**
 * Applies `patches` in order to `draft` (a draft of `immer`), each checked first by
 * {@link arrayPatchProblem} against the state the patches before it left. Throws an `Error` naming
 * the first patch refused (nothing of the caller's draft is kept then: the caller's `produce`
 * throws too). An `add` or `remove` that moves elements of a draft array first makes the array
 * plain (see {@link movedArray}). Returns whether it made one plain: a recipe must not run on that
 * draft afterwards, as a plain array is not the draft a recipe gets one entry at a time (`delete`
 * leaves a hole where a draft writes `undefined`; `Object.defineProperty` works where a draft
 * throws), so replicas batching differently would end in different states.
 *
 * The draft of a state that is itself an array cannot be made plain from inside (nothing holds
 * it): a patch that would move its elements throws {@link RootArrayMoves} instead, before
 * changing anything, and the caller applies the patches with {@link producePatched}.
 */
export function applyCheckedPatches(
  immer: Immer,
  draft: object,
  patches: readonly Patch[],
): boolean {
  let plain = false;
  for (const patch of patches) {
    const problem = arrayPatchProblem(draft, patch);
    if (problem !== undefined) throw new Error(problem);
    const moved = patch.op === "replace" ? undefined : movedArray(draft, patch.path);
    if (moved !== undefined) {
      if (moved.container === undefined) throw new RootArrayMoves();
      moved.container[moved.key] = moved.array.slice();
      plain = true;
    }
    immer.applyPatches(draft, [patch]);
  }
  return plain;
}

/**
 * Thrown by {@link applyCheckedPatches} before a patch that would move elements of a draft that
 * is the root of its state (an array): its moves would go through Immer's proxy.
 */
export class RootArrayMoves extends Error {
  constructor() {
    super("a patch moves elements of a state that is itself an array: apply it held");
  }
}

/** The key under which {@link producePatched} holds a state that is itself an array. */
const HELD = "state";

/**
 * The state `patches` give `base`, applied in a draft of `immer` as {@link applyCheckedPatches}
 * applies them (the same state or `Error`, as Immer's `applyPatches` one patch at a time gives,
 * with the same containers shared and frozen). A state that is itself an array is drafted held
 * in an object (`{ state: base }`), so that it too is made plain before a patch moves its
 * elements: through Immer's proxy, a hostile entry of 2,000 inserts at the front of a
 * 10,000-element root array held every replica's CPU for minutes.
 */
export function producePatched<T>(immer: Immer, base: T, patches: readonly Patch[]): T {
  if (!Array.isArray(base)) {
    return immer.produce(
      base,
      (draft) => void applyCheckedPatches(immer, draft as object, patches),
    );
  }
  const held = immer.produce({ [HELD]: base as unknown[] }, (holder) => {
    for (const patch of patches) {
      // Immer's `applyPatches` leaves a draft as it is for a `replace` of the root (`[]`).
      if (patch.op === "replace" && patch.path.length === 0) continue;
      const problem = arrayPatchProblem(holder[HELD], patch);
      if (problem !== undefined) throw new Error(problem);
      const path = heldPath(patch.path);
      const moved = patch.op === "replace" ? undefined : movedArray(holder, path);
      if (moved?.container !== undefined) moved.container[moved.key] = moved.array.slice();
      immer.applyPatches(holder, [{ ...patch, path }]);
    }
  });
  return held[HELD] as T;
}

/**
 * `path` (of a state) as a path in {@link producePatched}'s holder. Immer applies an `add` or
 * `remove` at the root itself (`[]`) at the key `undefined` of the root (an array splices it at
 * 0), so that is the key here too. Its `join` (Immer's error names a path it cannot resolve by
 * it) gives the text of `path`.
 */
function heldPath(path: Patch["path"]): Patch["path"] {
  const held: Patch["path"] = path.length === 0 ? [HELD, undefined as never] : [HELD, ...path];
  Object.defineProperty(held, "join", { value: (separator?: string) => path.join(separator) });
  return held;
}

/**
 * The draft array whose elements an `add` or `remove` at `path` in `root` moves, and where it is
 * held (`container` and `key`; no container when it is `root` itself); undefined when the patch
 * moves no element of a draft array (the array is plain already, or the patch is at its end or
 * refused). A splice of a draft goes through its proxy for every element it moves: a hostile entry
 * of 2,000 inserts at the front of a 10,000-element array took every replica 50 s (a
 * hostile-input trial; Immer's own patches add and remove at the end only). Made plain (a copy of
 * its elements, drafts staying drafts, as Immer's `sort` moves them), this and later splices of
 * it in the same draft are native.
 */
function movedArray(
  root: object,
  path: Patch["path"],
):
  | {
      array: unknown[];
      container: Record<string | number, unknown> | undefined;
      key: string | number;
    }
  | undefined {
  let container: unknown = undefined;
  let array: unknown = root;
  let key: string | number = "";
  for (let i = 0; i < path.length - 1; i++) {
    if (typeof array !== "object" || array === null) return undefined; // Immer refuses it
    container = array;
    key = path[i]!;
    array = (array as Record<string | number, unknown>)[key];
  }
  if (!Array.isArray(array) || !isDraft(array)) return undefined;
  // Immer splices an `add` or `remove` at the root itself (`[]`) at `undefined`, that is at 0.
  const last = path[path.length - 1];
  const index = last === "-" ? array.length : last === undefined ? 0 : indexOf(last);
  if (index === undefined || index >= array.length - 1) return undefined; // at the end: none moves
  return { array, container: container as Record<string | number, unknown> | undefined, key };
}
