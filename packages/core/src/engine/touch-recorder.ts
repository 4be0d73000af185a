import { isDraft, original } from "immer";
import {
  ARRAY_INDEX,
  arrayMethods,
  DRAFT_STATE,
  frozenView,
  type FrozenViewHost,
} from "./frozen-view.js";
import { firstHole, withValues } from "./touch-values.js";
import { VIEW_TARGET } from "../current.js";
import { StateSyncError } from "../errors.js";

/** A place a recipe wrote to, as a patch without its value (read from the draft when checked). */
export interface Touch {
  readonly op: "replace" | "remove";
  readonly path: ReadonlyArray<string | number>;
  /**
   * What was written there (a `replace` by assignment or definition; absent for a removal or a
   * change of an array's length): the value at `path` unless a later touch changed it.
   */
  readonly written?: { readonly value: unknown };
  /**
   * Set on a touch of an array itself (`path` is the array's) when a write made it longer than
   * the write filled: its length set higher, an element written or (Immer's `delete`, which
   * writes `undefined`) deleted past its end. The indices in between are holes, which neither
   * the schema check of one element nor the JSON check of a written value sees, while the whole
   * check refuses them (a hole is not JSON): `withValues` looks for the first hole left.
   */
  readonly holes?: true;
  /** With `holes`: the array's length before the write, below which it held every index. */
  readonly from?: number;
}

/**
 * Records where one recipe writes in a draft shared by several recipes (issue 12, "one draft per
 * batch"): Immer gives patches per `produce`, not per recipe, yet each recipe's result must be
 * checked against the schema along what it touched. `wrap(draft)` returns a view of the draft
 * whose writes (at any depth) go to the draft and are noted as paths; values written are
 * unwrapped so the draft never holds a view. `take()` hands the touches over and starts afresh.
 */
export class TouchRecorder {
  private touches: Touch[] = [];
  /**
   * Set when a recipe put a draft somewhere in the draft (`d.b = d.a`, `{ ...d.cards }`): the
   * same draft then sits at two places, and a later recipe writing through one would change the
   * other, where a fresh draft per recipe would not. The batch must end after such a recipe.
   */
  aliased = false;
  /**
   * Set when a recipe was handed a draft without a view around it (the value of a property
   * descriptor, `Object.getOwnPropertyDescriptor(view, key).value`, is the draft itself): writes
   * through it are not recorded, so the touches are not every write.
   */
  escaped = false;
  /**
   * Arrays written with holes (`d.list = new Array(n)`, filled or not by the recipe afterwards):
   * `refuseHoles` looks at them again, as Immer would walk every index of each.
   */
  private holey: unknown[][] = [];
  private readonly views = new WeakMap<object, Map<string, object>>();
  /**
   * The views of frozen values, apart from `views`: a recorder serves every recipe of a shared
   * draft, and a value one recipe wrote and read (a plain view) is frozen before the next.
   */
  private readonly frozenViews = new WeakMap<object, Map<string, object>>();
  private readonly targets = new WeakMap<object, object>();

  /**
   * Set when a recipe did what a shared draft answers otherwise than a draft of its own:
   * - it wrote, or tried to, into a frozen value it reached through a view. In a draft shared by
   *   several recipes that is a value an earlier recipe wrote (frozen then, see
   *   {@link freezeWritten}), where a draft of its own would hand it a draft of that value: the
   *   write is refused, even when the recipe caught the refusal or sloppy mode hid it;
   * - it asked Immer about a draft (`isDraft`, `original`, Immer's `current` read the draft's
   *   state): `original` answers what the shared draft started from, before the earlier
   *   recipes, and a value an earlier one wrote is no draft there.
   *
   * The recipe must run again alone. The runners of shared drafts read it after each recipe
   * ({@link takeRunAlone}).
   */
  private runAlone = false;

  /** Whether a recipe must run again alone since the last call (see `runAlone`). */
  takeRunAlone(): boolean {
    const w = this.runAlone;
    this.runAlone = false;
    return w;
  }

  /** What the views of frozen values need of this recorder (frozen-view.ts). */
  private readonly host: FrozenViewHost = {
    wrap: (value, path) => this.wrap(value, path),
    adopt: (view, target) => void this.targets.set(view, target),
    runAlone: () => void (this.runAlone = true),
  };

  /** The view of `value` at `path` (the same view each time, so identity comparisons hold). */
  wrap<T>(value: T, path: ReadonlyArray<string | number> = []): T {
    if (value === null || typeof value !== "object") return value;
    const frozen = !isDraft(value) && Object.isFrozen(value);
    const key = path.join("\u0000");
    const views = frozen ? this.frozenViews : this.views;
    let byPath = views.get(value);
    if (!byPath) views.set(value, (byPath = new Map()));
    const known = byPath.get(key);
    if (known) return known as T;
    if (frozen) {
      const view = frozenView(value as object, path, this.host);
      byPath.set(key, view);
      return view as T;
    }
    // An object's view stands on an empty object and forwards every operation: a proxy's
    // invariant checks then read that object, not the draft (a second trap of Immer's per read
    // and write). An array's stands on the array itself, so that it is still an array.
    const view = new Proxy(Array.isArray(value) ? value : {}, this.handler(path, value));
    byPath.set(key, view);
    this.targets.set(view, value);
    return view as T;
  }

  /** The object behind a view (or `value` itself). */
  unwrap<T>(value: T): T {
    if (value === null || typeof value !== "object") return value;
    return (this.targets.get(value) as T | undefined) ?? value;
  }

  /** The touches recorded since the last call. */
  take(): Touch[] {
    const t = this.touches;
    this.touches = [];
    this.holey = [];
    return t;
  }

  private handler(path: ReadonlyArray<string | number>, target: object): ProxyHandler<object> {
    const isArray = Array.isArray(target);
    const keyOf = (_: object, key: string): string | number =>
      isArray && ARRAY_INDEX.test(key) ? Number(key) : key;
    return {
      has: (_, key) => Reflect.has(target, key),
      ownKeys: () => Reflect.ownKeys(target),
      getPrototypeOf: () => Reflect.getPrototypeOf(target),
      setPrototypeOf: (_, proto) => Reflect.setPrototypeOf(target, proto),
      isExtensible: () => Reflect.isExtensible(target),
      preventExtensions: () => Reflect.preventExtensions(target),
      get: (_, key) => {
        if (key === VIEW_TARGET) return target; // for `current`, which reads the draft itself
        if (key === DRAFT_STATE) this.runAlone = true;
        // An array's methods are the standard ones, which read and write through this view. With
        // Immer's `enableArrayMethods` (an application may turn it on: plugins are global), a
        // draft's `push`, `splice`, `filter`, `find`... work on the draft itself instead: writes
        // unrecorded, drafts handed out without a view.
        if (isArray && typeof key === "string") {
          const method = arrayMethods.get(key);
          if (method) return method;
        }
        const v: unknown = Reflect.get(target, key);
        if (typeof key === "symbol" || v === null || typeof v !== "object") return v;
        return this.wrap(v, [...path, keyOf(target, key)]);
      },
      set: (_, key, value) => {
        if (typeof key === "symbol") return Reflect.set(target, key, value);
        if (isArray && key !== "length") notIndex(key);
        const before = isArray ? (target as unknown[]).length : 0;
        if (isArray && key === "length") {
          // The indices a shrink removes: those held, not every one below the old length (a
          // length written at 1e9 and back is two writes, not a billion removals). Read only for
          // a shrink by more than HELD_SCAN: a `push` onto a long array writes its length too,
          // and reading every key then was most of an update's cost (a fresh-eyes trial).
          const held = before - Number(value) > HELD_SCAN ? heldIndices(target) : undefined;
          const ok = Reflect.set(target, key, value);
          const after = (target as unknown[]).length;
          if (held) {
            for (const i of held)
              if (i >= after) this.touches.push({ op: "remove", path: [...path, i] });
          } else {
            for (let i = after; i < before; i++)
              this.touches.push({ op: "remove", path: [...path, i] });
          }
          if (after > before) this.touches.push({ op: "replace", path, holes: true, from: before });
          return ok;
        }
        const unwrapped = this.unwrapDeep(value);
        const written = { value: unwrapped };
        const k = keyOf(target, key);
        this.touches.push({ op: "replace", path: [...path, k], written });
        const ok = Reflect.set(target, key, unwrapped);
        if (isArray) this.noteGrowth(path, target as unknown[], before, k);
        return ok;
      },
      getOwnPropertyDescriptor: (_, key) => {
        const desc = Reflect.getOwnPropertyDescriptor(target, key);
        const v: unknown = desc?.value;
        if (v === null || typeof v !== "object") return desc;
        if (isDraft(v)) this.escaped = true;
        // A frozen value an earlier recipe of a shared draft wrote (not the base's: that one is
        // drafted once read, as alone) as its view, whose writes are noted: alone, once read, it
        // is a draft. (Wrapping each, `Object.keys` of a record of 10,000 took 2.5 times as long.)
        else if (typeof key === "string" && Object.isFrozen(v) && !inBase(target, key, v)) {
          desc!.value = this.wrap(v, [...path, keyOf(target, key)]);
        }
        return desc;
      },
      deleteProperty: (_, key) => {
        if (typeof key === "symbol") return Reflect.deleteProperty(target, key);
        if (isArray) notIndex(key);
        const k = keyOf(target, key);
        this.touches.push({ op: "remove", path: [...path, k] });
        if (!isArray) return Reflect.deleteProperty(target, key);
        // An Immer draft's `delete` writes `undefined`, past the end too (an array grows).
        const before = (target as unknown[]).length;
        const ok = Reflect.deleteProperty(target, key);
        this.noteGrowth(path, target as unknown[], before, k);
        return ok;
      },
      defineProperty: (_, key, desc) => {
        const d = "value" in desc ? { ...desc, value: this.unwrapDeep(desc.value) } : desc;
        if (typeof key === "symbol") return Reflect.defineProperty(target, key, d);
        const written = "value" in d && !d.get && !d.set ? { value: d.value } : undefined;
        const k = keyOf(target, key);
        this.touches.push({ op: "replace", path: [...path, k], written });
        const before = isArray ? (target as unknown[]).length : 0;
        const ok = Reflect.defineProperty(target, key, d);
        if (isArray) this.noteGrowth(path, target as unknown[], before, k);
        return ok;
      },
    };
  }

  /**
   * Notes the array at `path` as possibly holding holes when a write at `key` took its length from
   * `before` past what that write filled (`key` itself when it was the end: a push).
   */
  private noteGrowth(
    path: ReadonlyArray<string | number>,
    array: readonly unknown[],
    before: number,
    key: string | number,
  ): void {
    if (array.length > (key === before ? before + 1 : before)) {
      this.touches.push({ op: "replace", path, holes: true, from: before });
    }
  }

  /**
   * Throws `holes` when a write since the last `take()` left an array of `root` (the draft the
   * views stand on) with a hole. Called inside the draft's `produce`, as soon as a recipe
   * returned: Immer's finalizing of an array grown by a large index, and its patches of it, cost
   * time and memory in proportion to the index (a command writing index 1e8 ran a replica out of
   * memory), so such a write must be refused before Immer sees the end of the recipe. The scan
   * starts where each growth started: its cost is what the recipe wrote, not the index.
   */
  refuseHoles(root: unknown, holes: () => unknown): void {
    const grown = this.touches.filter((t) => t.holes);
    if (grown.length > 0 && withValues(root, grown).length > 0) throw holes();
    for (const a of this.holey) if (firstHole(a, 0) !== undefined) throw holes();
    this.holey = [];
  }

  /**
   * `value` with every view inside it replaced by its object (a new object built by a recipe may
   * hold views it read, `{ ...draft.cards }`). Frozen values and drafts hold none. Iterative, each
   * object walked once: a value of any depth, or one that contains itself, is the check's to
   * refuse (`VALIDATION`), after the recipe, not a stack overflow inside it.
   */
  private unwrapDeep(value: unknown): unknown {
    if (value === null || typeof value !== "object") return value;
    const top = this.unwrapOne(value);
    if (top !== value || !walkable(value)) return top;
    const seen = new Set<object>([value]);
    const stack: object[] = [value];
    while (stack.length > 0) {
      const obj = stack.pop() as Record<string, unknown>;
      const keys = Object.keys(obj);
      if (Array.isArray(obj) && keys.length < obj.length) this.holey.push(obj);
      for (const k of keys) {
        const v = obj[k];
        if (v === null || typeof v !== "object") continue;
        const u = this.unwrapOne(v);
        if (u !== v) obj[k] = u;
        else if (walkable(v) && !seen.has(v)) {
          seen.add(v);
          stack.push(v);
        }
      }
    }
    return value;
  }

  /** The object behind `value` when it is a view; notes a draft put in the draft (`aliased`). */
  private unwrapOne(value: object): unknown {
    const target = this.targets.get(value);
    if (target) {
      if (isDraft(target)) this.aliased = true;
      return target;
    }
    if (isDraft(value)) this.aliased = true;
    return value;
  }
}

/**
 * Runs `recipe` on a {@link TouchRecorder}'s view of `draft` (an Immer draft, inside its
 * `produce`) and returns what it returned (a view unwrapped). Throws a `StateSyncError`
 * `VALIDATION` when the recipe left an array with holes, before Immer finalizes the draft (see
 * `refuseHoles`: a write at index 1e9 would otherwise cost Immer 1e9 steps), and a `TypeError`
 * for a write of a key of an array that is not an index. For the views that run queued commands
 * outside the writer (the optimistic view, other tabs' pending updates in the browser).
 */
export function runOnView(draft: object, recipe: (view: unknown) => unknown): unknown {
  const recorder = new TouchRecorder();
  const result = recorder.unwrap(recipe(recorder.wrap(draft)));
  recorder.refuseHoles(draft, holesError);
  return result;
}

/**
 * The `VALIDATION` error of a recipe that left an array with holes (a length written, then an
 * index past the elements kept). A hole is not JSON, and Immer's patches leave it out: the writer
 * would have kept a state other replicas do not get from its patches (found beside the checked
 * commands' fix, stop 20).
 */
export function holesError(): StateSyncError {
  return new StateSyncError(
    "VALIDATION",
    "the update leaves an array with holes (indices it does not hold, which JSON cannot store); nothing was appended",
  );
}

/** Whether `value` is what the draft `target` held at `key` when it was drafted. */
function inBase(target: object, key: string, value: unknown): boolean {
  return isDraft(target) && (original(target) as Record<string, unknown>)[key] === value;
}

/** Whether `unwrapDeep` looks inside `value`: a draft or a frozen value holds no view. */
function walkable(value: object): boolean {
  return !isDraft(value) && !Object.isFrozen(value);
}

/** Past this many removed indices a shrink reads those the array holds instead of each one. */
const HELD_SCAN = 4096;

/** The indices `array` holds (an Immer draft's keys are those of its latest copy). */
function heldIndices(array: object): number[] {
  const out: number[] = [];
  for (const k of Object.keys(array)) if (ARRAY_INDEX.test(k)) out.push(Number(k));
  return out;
}

/**
 * Throws unless `key` is an array index. Immer refuses any other key of an array draft only in
 * development builds (`NODE_ENV` other than `"production"`): a command writing `list.foo` was a
 * no-op where Node ran in development and applied (with the command's other writes) where a
 * bundle ran in production. Refused here alike on every replica.
 */
function notIndex(key: string): void {
  if (!ARRAY_INDEX.test(key)) {
    throw new TypeError(`an array holds only indices and its length: cannot write "${key}"`);
  }
}
