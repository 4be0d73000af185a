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
 * plain ({@link undraftArray}). Returns whether it made one plain: a recipe must not run on that
 * draft afterwards, as a plain array is not the draft a recipe gets one entry at a time (`delete`
 * leaves a hole where a draft writes `undefined`; `Object.defineProperty` works where a draft
 * throws), so replicas batching differently would end in different states.
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
    if (patch.op !== "replace" && undraftArray(draft, patch.path)) plain = true;
    immer.applyPatches(draft, [patch]);
  }
  return plain;
}

/**
 * Before an `add` or `remove` at `path` that moves elements of an array that is an Immer draft:
 * replaces the array in its container with a plain array of the same elements (drafts stay
 * drafts, as Immer's `sort` moves them), so this and later splices of it in the same draft are
 * native. A splice of a draft goes through its proxy for every element it moves: a hostile entry
 * of 2,000 inserts at the front of a 10,000-element array took every replica 50 s (a
 * hostile-input trial; Immer's own patches add and remove at the end only). The elements of a
 * state that is itself an array are spliced as they are (its draft cannot be replaced from
 * inside). Returns whether it did.
 */
function undraftArray(root: object, path: Patch["path"]): boolean {
  if (path.length < 2) return false;
  let container: unknown = root;
  for (let i = 0; i < path.length - 2; i++) {
    if (typeof container !== "object" || container === null) return false; // Immer refuses it
    container = (container as Record<string | number, unknown>)[path[i]!];
  }
  if (typeof container !== "object" || container === null) return false;
  const key = path[path.length - 2]!;
  const array = (container as Record<string | number, unknown>)[key];
  if (!Array.isArray(array) || !isDraft(array)) return false;
  const last = path[path.length - 1];
  const index = last === "-" ? array.length : indexOf(last);
  if (index === undefined || index >= array.length - 1) return false; // at the end: nothing moves
  (container as Record<string | number, unknown>)[key] = array.slice();
  return true;
}
