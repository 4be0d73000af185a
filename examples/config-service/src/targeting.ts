import type { Json, JsonObject } from "./flagd-schema.js";

/**
 * Static reading of flagd targeting (JsonLogic plus flagd's `fractional`, `sem_ver`,
 * `starts_with`, `ends_with`), for the commands that edit flags. flagd serves the variant whose
 * name is the targeting's result turned into a string (`true` serves variant `"true"`), and the
 * default variant when the result is `null`. A node is in a *variant position* when its value
 * can become that result: the root, the branches (not the conditions) of an `if` in a variant
 * position, the operands of `and` / `or` in a variant position (they return one of them), and
 * the bucket variants of a `fractional` in a variant position.
 */

/** A `fractional` node found in a flag's targeting. */
export interface FractionalRule {
  /** Where it is, e.g. `targeting.if[2]`. */
  readonly path: string;
  /** The node `{ "fractional": [...] }` itself (a draft when read from one). */
  readonly node: JsonObject;
  /**
   * `variant`: the bucket it picks is the variant served (it is the root or, through `if`
   * branches only, a branch of it); `operand`: its result feeds an operator (an `if` condition,
   * `and` / `or`, a comparison, another `fractional`...).
   */
  readonly role: "variant" | "operand";
}

/** What a flag's targeting can resolve to. */
export interface PossibleVariants {
  /** Variant names it can return (results turned into strings, as flagd does). */
  readonly names: ReadonlySet<string>;
  /** Expressions in variant positions whose result cannot be known statically (with paths). */
  readonly computed: readonly string[];
}

/** Operators whose result is always `true`, `false` (or `null` for flagd's on a bad input). */
const BOOLEAN_OPERATORS = new Set([
  "==",
  "===",
  "!=",
  "!==",
  ">",
  ">=",
  "<",
  "<=",
  "!",
  "!!",
  "in",
  "some",
  "all",
  "none",
  "starts_with",
  "ends_with",
  "sem_ver",
]);

function operatorOf(node: Json): { op: string; args: Json } | undefined {
  if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
  const keys = Object.keys(node);
  if (keys.length !== 1) return undefined;
  return { op: keys[0]!, args: node[keys[0]!]! };
}

/** Index of the branches of an `if` with `count` arguments (`then`s, and a final `else`). */
function isIfBranch(index: number, count: number): boolean {
  return index % 2 === 1 || index === count - 1;
}

/** Every `fractional` node of `targeting` (the flag's own, `$ref`s not followed), in order. */
export function findFractionals(targeting: Json): FractionalRule[] {
  const found: FractionalRule[] = [];
  const walk = (node: Json, path: string, inVariant: boolean): void => {
    if (node === null || typeof node !== "object") return;
    const operator = operatorOf(node);
    if (Array.isArray(node) || operator === undefined) {
      for (const [key, child] of Object.entries(node)) walk(child, `${path}[${key}]`, false);
      return;
    }
    const { op, args } = operator;
    const list = Array.isArray(args) ? args : [args];
    const at = (i: number) => (Array.isArray(args) ? `${path}.${op}[${i}]` : `${path}.${op}`);
    if (op === "fractional") {
      found.push({ path, node: node as JsonObject, role: inVariant ? "variant" : "operand" });
    }
    list.forEach((child, i) =>
      walk(child, at(i), inVariant && op === "if" && isIfBranch(i, list.length)),
    );
  };
  walk(targeting, "targeting", true);
  return found;
}

/**
 * The variants `targeting` can serve. `targeting` must have its `$ref`s expanded (see
 * {@link expandedTargeting}); a `$ref` left over counts as computed.
 */
export function possibleVariants(targeting: Json | undefined): PossibleVariants {
  const names = new Set<string>();
  const computed: string[] = [];
  const visit = (node: Json, path: string): void => {
    if (node === null) return;
    if (typeof node !== "object") {
      names.add(String(node));
      return;
    }
    const operator = operatorOf(node);
    if (Array.isArray(node) || operator === undefined) {
      computed.push(`a literal ${Array.isArray(node) ? "array" : "object"} at ${path}`);
      return;
    }
    const { op, args } = operator;
    const list = Array.isArray(args) ? args : undefined;
    if (BOOLEAN_OPERATORS.has(op)) {
      names.add("true");
      names.add("false");
    } else if (list === undefined) {
      computed.push(`"${op}" at ${path}`);
    } else if (op === "if") {
      list.forEach((c, i) => isIfBranch(i, list.length) && visit(c, `${path}.if[${i}]`));
    } else if (op === "and" || op === "or") {
      list.forEach((c, i) => visit(c, `${path}.${op}[${i}]`));
    } else if (op === "fractional") {
      list.forEach((bucket, i) => {
        if (Array.isArray(bucket) && bucket.length > 0) {
          visit(bucket[0]!, `${path}.fractional[${i}][0]`);
        }
      });
    } else {
      computed.push(`"${op}" at ${path}`);
    }
  };
  if (targeting !== undefined && Object.keys(targeting as object).length > 0) {
    visit(targeting, "targeting");
  }
  return { names, computed };
}

/**
 * The targeting of every flag of `config` as flagd evaluates it: with every `{"$ref": name}`
 * replaced by `$evaluators[name]`, the way `@openfeature/flagd-core` does it (one textual pass
 * over the whole document, evaluator by evaluator, so a `$ref` inside an evaluator is expanded
 * only when that evaluator's key comes later).
 */
export function expandedTargetings(config: JsonObject): Record<string, Json | undefined> {
  const evaluators = config["$evaluators"];
  let flags = config["flags"] as Record<string, JsonObject>;
  if (evaluators) {
    let text = JSON.stringify(config);
    for (const [name, evaluator] of Object.entries(evaluators as JsonObject)) {
      text = text.replaceAll(`{"$ref":"${name}"}`, JSON.stringify(evaluator));
    }
    flags = (JSON.parse(text) as { flags: Record<string, JsonObject> }).flags;
  }
  return Object.fromEntries(Object.entries(flags).map(([key, flag]) => [key, flag["targeting"]]));
}

/**
 * For each flag of `config`, the variant names it can serve that are not among its variants
 * (each makes evaluation return reason `ERROR`): known targeting results, and a default variant
 * that is missing. Flags without any are left out.
 */
export function unservableVariants(config: JsonObject): Map<string, string[]> {
  const targetings = expandedTargetings(config);
  const result = new Map<string, string[]>();
  for (const [key, flag] of Object.entries(config["flags"] as Record<string, JsonObject>)) {
    const variants = flag["variants"] as JsonObject;
    const candidates = [...possibleVariants(targetings[key]).names];
    const defaultVariant = flag["defaultVariant"];
    if (typeof defaultVariant === "string" && defaultVariant !== "")
      candidates.push(defaultVariant);
    const missing = [...new Set(candidates)].filter((name) => !Object.hasOwn(variants, name));
    if (missing.length > 0) result.set(key, missing);
  }
  return result;
}
