import type { Patch } from "immer";
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import { safeParse, schemaIssues } from "../schema-parse.js";

/** The parts of a zod 4 schema's definition this module reads (`schema._zod.def`). */
interface Def {
  readonly type: string;
  readonly checks?: readonly unknown[];
  readonly shape?: Record<string, z.ZodType>;
  readonly catchall?: z.ZodType;
  readonly keyType?: z.ZodType;
  readonly valueType?: z.ZodType;
  readonly element?: z.ZodType;
  readonly innerType?: z.ZodType;
  /** A record made by `z.partialRecord`: its keys need not all be there. */
  readonly partial?: boolean;
}

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** Wrappers that only admit `null`/`undefined` besides their inner schema. */
const WRAPPERS = new Set(["optional", "nullable"]);

/**
 * A container schema a check may look through to one key: a plain object, record or array with
 * no checks of its own (a refinement or a length limit of the container could depend on any of
 * its members). Optional and nullable wrappers without checks are looked through.
 */
function container(schema: z.ZodType): Def | undefined {
  let def = defOf(schema);
  while (WRAPPERS.has(def.type) && !def.checks?.length && def.innerType) def = defOf(def.innerType);
  if (def.checks?.length) return undefined;
  return def.type === "object" || def.type === "record" || def.type === "array" ? def : undefined;
}

/** The schema of `key` in a container, or undefined when the container must be checked whole. */
function child(def: Def, key: string | number): z.ZodType | undefined {
  if (def.type === "array") return typeof key === "number" ? def.element : undefined;
  if (def.type === "record") {
    if (typeof key !== "string" || !def.keyType) return undefined;
    const k = safeParse(def.keyType, key);
    // zod 4 leaves out a member whose key its key schema turns into `__proto__`, unparsed.
    return k.success && k.data !== "__proto__" ? def.valueType : undefined;
  }
  const k = String(key);
  if (def.shape && Object.hasOwn(def.shape, k)) return def.shape[k];
  return def.catchall; // undefined for a plain object: an undeclared key passes as it is
}

/** Whether a record needs every value of its key schema as a key (zod 4: `_zod.values`). */
function exhaustive(def: Def): boolean {
  const values = (def.keyType as unknown as { _zod?: { values?: unknown } } | undefined)?._zod
    ?.values;
  return values !== undefined && def.partial !== true;
}

/** Schemas checked by the type of a value alone (see `passes`), or null: parse them. */
const plainLeaves = new WeakMap<z.ZodType, "string" | "boolean" | "number" | null>();

function plainLeaf(schema: z.ZodType): "string" | "boolean" | "number" | null {
  let kind = plainLeaves.get(schema);
  if (kind === undefined) {
    const def = defOf(schema) as unknown as Record<string, unknown>;
    // Exactly `z.string()` / `z.boolean()` / `z.number()`: a definition with nothing but its type
    // (a format such as `z.email()`, a coercion, a custom error or a check adds keys: parsed).
    const noChecks = Array.isArray(def.checks) && def.checks.length === 0;
    const bare = Object.keys(def).every((k) => k === "type" || (k === "checks" && noChecks));
    const type = def.type;
    kind = bare && (type === "string" || type === "boolean" || type === "number") ? type : null;
    plainLeaves.set(schema, kind);
  }
  return kind;
}

/**
 * Whether `value` passes `schema`: by its type alone for a bare `z.string()`, `z.boolean()` or
 * `z.number()` (finite), which is zod's whole verdict there and costs no parse (the catch-up of
 * a text-editing trace checks one string per command); otherwise `safeParse`.
 */
function passes(schema: z.ZodType, value: unknown): boolean {
  const kind = plainLeaf(schema);
  if (kind === null) return safeParse(schema, value).success;
  return kind === "number" ? Number.isFinite(value) : typeof value === kind;
}

/**
 * Checks states that recipes produce against the model's schema, looking only at what the
 * patches touched where the schema allows it (issue 8, "cost of a small change to a large
 * state"): a patch at `a.b.c` is checked against the schema of `c` inside `b` when every
 * container on the way is a plain object, record or array without refinements or length checks;
 * otherwise at the deepest container that has one, up to the whole state. The verdict is the
 * one `schema.safeParse(state)` gives for a state that was valid before the patches.
 */
export class StateChecker<S> {
  constructor(private readonly schema: z.ZodType<S>) {}

  /** Throws `VALIDATION` when `after` (produced from the valid `before` by `patches`) is invalid. */
  check(before: S, after: S, patches: readonly Patch[]): void {
    void before;
    let unsure = false;
    for (const patch of patches) {
      const verdict = this.patchVerdict(after, patch);
      if (verdict === false) unsure = true;
      else if (verdict !== true) throw invalid(verdict);
    }
    if (!unsure) return;
    const result = safeParse(this.schema, after); // a conservative local verdict: the whole decides
    if (!result.success) throw invalid({ error: result.error, at: [] });
  }

  /**
   * `true` when the patch keeps the state valid; `false` when it may not (the whole state is
   * checked); or where it fails for sure: a part of the state reached through containers the
   * whole schema parses member by member (so the whole parse applies exactly that part's schema
   * to it) fails its schema, and so does the whole state (before, the whole state was parsed for
   * every refused update or command: milliseconds on a large state, on every replica).
   */
  private patchVerdict(after: S, patch: Patch): boolean | Failure {
    const path = patch.path;
    if (path.length === 0) return false;
    // Descend to the container the patch changes, as far as the schema lets a check look.
    let schema: z.ZodType = this.schema;
    let value: unknown = after;
    for (let i = 0; i < path.length - 1; i++) {
      const def = container(schema);
      const next = def && child(def, path[i]!);
      if (!next) return exactly(schema, value, () => path.slice(0, i));
      schema = next;
      value = (value as Record<string | number, unknown>)[path[i]!];
    }
    const def = container(schema);
    const key = path[path.length - 1]!;
    if (!def) return exactly(schema, value, () => path.slice(0, -1));
    if (patch.op === "remove") {
      // A record whose key schema lists its values (an enum, literals) needs every one of them
      // (zod 4's `z.record`; not `z.partialRecord`): removing a key is checked with the record.
      if (def.type === "record") {
        return !exhaustive(def) || exactly(schema, value, () => path.slice(0, -1));
      }
      if (def.type !== "object") return true;
      // A catchall parses only the undeclared keys there are: removing one is no change to check.
      if (!def.shape || !Object.hasOwn(def.shape, String(key))) return true;
      return absent(def.shape[String(key)]!, () => path);
    }
    const target = child(def, key);
    if (target === undefined) {
      // A plain object's undeclared key passes; a record key its key schema refuses does not.
      return def.type === "object" && def.catchall === undefined;
    }
    // A strict object's undeclared key: the object's own parse says why (an unrecognized key
    // of the object, not a value at the key that fails `z.never()`).
    if (target === def.catchall && defOf(target).type === "never")
      return exactly(schema, value, () => path.slice(0, -1));
    return passes(target, patch.value) || exactly(target, patch.value, () => path);
  }
}

/**
 * Whether an object may lack a declared key whose schema is `schema` (the key at `path`): `true`,
 * the failure, or `false` (the whole object decides). An absent key is not the value `undefined`
 * to zod 4's object parse, which reads the schema's `optin`/`optout` for it, differently by
 * version: zod 4.6 does not parse an absent optional key and zod 3.25's "zod/v4" drops its
 * issues, so `z.string().optional().refine(...)` passes absent whatever it makes of `undefined`;
 * and zod 4.6 fails a key not optional-in when absent even where its schema takes `undefined`
 * (`z.unknown()`, `z.any()`, a union with `z.undefined()`), which 3.25 lets pass. Past those,
 * a schema that takes `undefined` passes absent, and one that does not fails absent unless
 * optional-out.
 */
function absent(schema: z.ZodType, path: () => Path): boolean | Failure {
  const { optin, optout } = (schema as unknown as { _zod: { optin?: string; optout?: string } })
    ._zod;
  if (optin === "optional" && optout === "optional") return true;
  const verdict = exactly(schema, undefined, path);
  if (verdict === true) return optin !== undefined; // (else zod 4.6 and 3.25 differ)
  return optout === "optional" ? false : verdict;
}

/** Where a state fails its schema for sure: the issues, and the path they are relative to. */
interface Failure {
  readonly error: z.ZodError;
  readonly at: ReadonlyArray<string | number>;
}

type Path = ReadonlyArray<string | number>;

/** `true` when `value` passes `schema`, else the failure, its issues under `at()`. */
function exactly(schema: z.ZodType, value: unknown, at: () => Path): true | Failure {
  const result = safeParse(schema, value);
  return result.success ? true : { error: result.error, at: at() };
}

/** The `VALIDATION` error of a state that fails its schema (`failure.at` prefixes each issue). */
function invalid({ error, at }: Failure): StateSyncError {
  const whole =
    at.length === 0
      ? error
      : new z.ZodError(error.issues.map((i) => ({ ...i, path: [...at, ...i.path] })));
  return new StateSyncError(
    "VALIDATION",
    `the update would make the state invalid: ${schemaIssues(whole)}`,
    { cause: whole },
  );
}
