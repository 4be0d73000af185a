import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { StateSyncError } from "./errors.js";

/** A JSON value: what states, command arguments and patch values are restricted to. */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Checks iteratively (no recursion, so hostile depth cannot overflow the stack) that `value` is a
 * plain JSON value: null, booleans, finite numbers, strings, arrays and plain objects, without
 * cycles (an object or array inside itself: `JSON.stringify` throws on it, and a walk without end
 * would hang the process until it runs out of memory; one value in two places is fine). Returns a
 * description of the first offending path, or undefined when it is JSON.
 */
export function findNonJson(value: unknown, maxDepth = Infinity): string | undefined {
  // A leaf (what most recorded writes are: one string, one number) needs no walk.
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number")
    return Number.isFinite(value) ? undefined : `$: ${value} is not a finite number`;
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
    if (depth > maxDepth) return `${path}: nested deeper than ${maxDepth}`;
    if (v === null || typeof v === "string" || typeof v === "boolean") continue;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return `${path}: ${v} is not a finite number`;
      continue;
    }
    if (typeof v !== "object") return `${path}: ${typeof v} is not a JSON value`;
    open ??= new Set();
    if (open.has(v)) return `${path}: a cycle (the value contains itself)`;
    if (Array.isArray(v)) {
      open.add(v);
      stack.push({ v, path, depth, exit: true });
      for (let i = 0; i < v.length; i++)
        stack.push({ v: v[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return `${path}: not a plain object`;
    open.add(v);
    stack.push({ v, path, depth, exit: true });
    for (const k of Object.keys(v)) {
      stack.push({ v: (v as Record<string, unknown>)[k], path: `${path}.${k}`, depth: depth + 1 });
    }
  }
  return undefined;
}

/** Throws `VALIDATION` unless `value` is a plain JSON value (see {@link findNonJson}). */
export function assertJson(value: unknown, what: string): void {
  const problem = findNonJson(value);
  if (problem !== undefined) {
    throw new StateSyncError("VALIDATION", `${what} is not a JSON value (${problem})`);
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

function canonical(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(",")}}`;
}

/**
 * SHA-256 (hex) of the canonical JSON of `value` (with `@noble/hashes`, synchronous, any
 * runtime). Use it to compare replicas: two replicas at one revision have the same `stateHash`.
 */
export function stateHash(value: unknown): string {
  return bytesToHex(sha256(new TextEncoder().encode(canonicalJson(value))));
}
