import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { StateSyncError } from "./errors.js";
import { nestingDepth } from "./nesting.js";

/** A JSON value: what states, command arguments and patch values are restricted to. */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The first problem {@link findJsonProblem} found: where, and whether it is only the depth. */
export interface JsonProblem {
  /** The value's path, `$` for the value itself (`$.a[0].b`). */
  readonly path: string;
  /** True when the value is JSON but nests deeper than the limit asked for. */
  readonly tooDeep: boolean;
  /** What is wrong there. */
  readonly message: string;
}

/**
 * Checks iteratively (no recursion, so hostile depth cannot overflow the stack) that `value` is a
 * plain JSON value: null, booleans, finite numbers, strings, arrays and plain objects, without
 * cycles (an object or array inside itself: `JSON.stringify` throws on it, and a walk without end
 * would hang the process until it runs out of memory; one value in two places is fine), and
 * that its arrays and objects nest at most `maxDepth` levels (counted as the brackets of its
 * JSON text: a number or string is 0 levels, `{}` 1, `{ "a": [] }` 2). Returns a description of
 * the first offending path, or undefined when it is JSON within the depth.
 */
export function findNonJson(value: unknown, maxDepth = Infinity): string | undefined {
  const problem = findJsonProblem(value, maxDepth);
  return problem && `${problem.path}: ${problem.message}`;
}

/** Why `v`, an object whose prototype is not `Object.prototype`, is no JSON value. */
function notPlain(v: object): string {
  const name = (v as { constructor?: { name?: unknown } }).constructor?.name;
  const hint =
    v instanceof Date
      ? " (store a Date as its toISOString() or getTime())"
      : v instanceof Map || v instanceof Set
        ? " (store it as an array or a plain object)"
        : "";
  return typeof name === "string" && name !== "" && name !== "Object"
    ? `a ${name}, not a plain object${hint}`
    : "not a plain object";
}

/** {@link findNonJson}'s walk, with its finding as a value. */
export function findJsonProblem(value: unknown, maxDepth = Infinity): JsonProblem | undefined {
  // A leaf (what most recorded writes are: one string, one number) needs no walk.
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") {
    return Number.isFinite(value) ? undefined : bad("$", `${value} is not a finite number`);
  }
  /** Work items: a value to check, or (`exit`) a container whose children are all checked. */
  const stack: Array<{ v: unknown; path: string; depth: number; exit?: true }> = [
    { v: value, path: "$", depth: 0 },
  ];
  /** The containers on the path from `value` to the item being checked (made at the first). */
  let open: Set<object> | undefined;
  while (stack.length > 0) {
    const { v, path, depth, exit } = stack.pop()!;
    if (exit) {
      open!.delete(v as object);
      continue;
    }
    if (v === null || typeof v === "string" || typeof v === "boolean") continue;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return bad(path, `${v} is not a finite number`);
      continue;
    }
    if (typeof v !== "object") return bad(path, `${typeof v} is not a JSON value`);
    open ??= new Set();
    if (open.has(v)) return bad(path, "a cycle (the value contains itself)");
    const isArray = Array.isArray(v);
    if (!isArray) {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return bad(path, notPlain(v));
    }
    // `depth` containers hold this one: with it, the value nests depth + 1 levels here.
    if (depth + 1 > maxDepth) {
      return { path: shortPath(path), tooDeep: true, message: `nested deeper than ${maxDepth}` };
    }
    open.add(v);
    stack.push({ v, path, depth, exit: true });
    if (isArray) {
      // A hole is found before anything is pushed: `new Array(1e9)` costs one look, not a
      // billion work items.
      for (let i = 0; i < v.length; i++) {
        if (!(i in v)) return bad(`${path}[${i}]`, "a hole (an index the array does not hold)");
      }
      for (let i = 0; i < v.length; i++)
        stack.push({ v: v[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    for (const k of Object.keys(v)) {
      stack.push({ v: (v as Record<string, unknown>)[k], path: `${path}.${k}`, depth: depth + 1 });
    }
  }
  return undefined;
}

/**
 * {@link findJsonProblem}, and for a value found too deep, how deep it nests (`depth`, walked
 * again only then, for the message); a value too deep that also contains itself is reported as
 * what is wrong with it (the cycle), which has no depth.
 */
export function findJsonProblemWithDepth(
  value: unknown,
  maxDepth: number,
): (JsonProblem & { readonly depth?: number }) | undefined {
  const problem = findJsonProblem(value, maxDepth);
  if (!problem?.tooDeep) return problem;
  const depth = nestingDepth(value);
  return depth === Infinity ? (findJsonProblem(value) ?? problem) : { ...problem, depth };
}

/** A path as `.a[0].b` (after a `$`), cut in the middle past 160 characters. */
export function pathText(path: ReadonlyArray<string | number>): string {
  return shortPath(path.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join(""));
}

function bad(path: string, message: string): JsonProblem {
  return { path: shortPath(path), tooDeep: false, message };
}

/** A path of a deeply nested value, cut in the middle past 160 characters (error messages). */
function shortPath(path: string): string {
  return path.length <= 160 ? path : `${path.slice(0, 80)}…${path.slice(-60)}`;
}

/**
 * `JSON.stringify(value)` of a value about to be stored (an entry, a record) whose parts were
 * checked where they came in: should it still hold something `JSON.stringify` cannot write (a
 * value nested too deep for its recursion, a cycle, a `BigInt`), `VALIDATION` saying `what` it
 * is and where, found by an iterative walk, instead of a raw `RangeError` or `TypeError`.
 */
export function storedJson(value: unknown, maxDepth: number, what: string): string {
  try {
    return JSON.stringify(value);
  } catch (cause) {
    const problem = findJsonProblemWithDepth(value, maxDepth);
    const why =
      problem === undefined
        ? String(cause)
        : problem.depth !== undefined
          ? `it nests ${problem.depth} levels deep, past ${maxDepth} at ${problem.path}`
          : `${problem.path}: ${problem.message}`;
    throw new StateSyncError("VALIDATION", `${what} cannot be stored: ${why}`, { cause });
  }
}

/**
 * Canonical JSON text of a JSON value: object keys sorted (by UTF-16 code units, as
 * `Array.prototype.sort`), no whitespace; otherwise `JSON.stringify`'s output. Same value, same
 * text, on every runtime. Throws `VALIDATION` for a value that is not JSON (see {@link findNonJson}).
 */
export function canonicalJson(value: unknown): string {
  const problem = findNonJson(value);
  if (problem !== undefined)
    throw new StateSyncError("VALIDATION", `not a JSON value (${problem})`);
  return canonical(value);
}

/** A container `canonical` is inside: its members (an object's keys, sorted) and where it is. */
interface Frame {
  readonly container: Record<string, unknown> | unknown[];
  readonly keys: string[] | undefined;
  at: number;
}

/**
 * How many levels `canonical` recurses (the fast way); members nested deeper are written by
 * `canonicalDeep`, iteratively, so a state nested 100,000 levels deep (which an unconditional
 * command can make) is hashed like any other, on any stack.
 */
const RECURSE_LEVELS = 256;

function canonical(v: unknown, depth = 0): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (depth >= RECURSE_LEVELS) return canonicalDeep(v);
  if (Array.isArray(v)) return `[${v.map((m) => canonical(m, depth + 1)).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k], depth + 1)}`)
    .join(",")}}`;
}

/**
 * `canonical`'s text, iteratively (slower): `frames` holds the containers being written,
 * innermost last.
 */
function canonicalDeep(value: unknown): string {
  let out = "";
  const frames: Frame[] = [];
  let v = value;
  for (;;) {
    // Write the start of `v` (all of it, for a leaf or an empty container).
    if (v === null || typeof v !== "object") out += JSON.stringify(v);
    else if (Array.isArray(v)) {
      if (v.length > 0) {
        out += "[";
        frames.push({ container: v, keys: undefined, at: 0 });
        v = v[0];
        continue;
      }
      out += "[]";
    } else {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).sort();
      if (keys.length > 0) {
        out += `{${JSON.stringify(keys[0])}:`;
        frames.push({ container: o, keys, at: 0 });
        v = o[keys[0]!];
        continue;
      }
      out += "{}";
    }
    // Then the next member of the innermost container not finished, closing finished ones.
    let next = false;
    while (!next) {
      const f = frames[frames.length - 1];
      if (f === undefined) return out;
      f.at++;
      if (f.keys === undefined) {
        const a = f.container as unknown[];
        if (f.at < a.length) {
          out += ",";
          v = a[f.at];
          next = true;
        } else out += "]";
      } else if (f.at < f.keys.length) {
        const k = f.keys[f.at]!;
        out += `,${JSON.stringify(k)}:`;
        v = (f.container as Record<string, unknown>)[k];
        next = true;
      } else out += "}";
      if (!next) frames.pop();
    }
  }
}

/**
 * SHA-256 (hex) of the canonical JSON of `value` (with `@noble/hashes`, synchronous, any
 * runtime). Use it to compare replicas: two replicas at one revision have the same `stateHash`.
 */
export function stateHash(value: unknown): string {
  return bytesToHex(sha256(new TextEncoder().encode(canonicalJson(value))));
}

/**
 * Whether two JSON values are equal (object keys in any order). Recurses only as deep as the
 * shallower value is nested before they differ, so compare a value from the log with a known
 * shallow one (a model's initial state); stops at the first difference.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((v, i) => jsonEqual(v, other[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  return keys.every((k) => Object.hasOwn(y, k) && jsonEqual(x[k], y[k]));
}
