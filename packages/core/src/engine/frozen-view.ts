import { VIEW_TARGET } from "../current.js";

/*
 * The traps of a `TouchRecorder`'s view of a frozen value (touch-recorder.ts): in a draft shared
 * by several recipes, what an earlier recipe wrote is frozen (`freezeWritten`), where a draft of
 * its own would hand the recipe a draft of it. The view reads as that draft would, and refuses
 * and notes every write, so the recipe runs again alone.
 */

/** The key of an Immer draft's state (`isDraft`, `original` read it). */
export const DRAFT_STATE = Symbol.for("immer-state");

/** An array index as a property key: `0`, or digits without a leading zero. */
export const ARRAY_INDEX = /^(0|[1-9]\d*)$/;

/** `Array.prototype`'s methods by name (its constructor aside). */
export const arrayMethods = new Map<string, unknown>(
  Object.getOwnPropertyNames(Array.prototype)
    .filter((k) => k !== "constructor")
    .map((k) => [k, (Array.prototype as unknown as Record<string, unknown>)[k]] as const)
    .filter(([, v]) => typeof v === "function"),
);

/**
 * The traps of the view of `target`, a frozen value at `path`: read as a draft of it reads
 * (members as views, `wrap`ped; writable; the view itself not frozen: what a recipe alone sees
 * of the same value); every write refused, as the frozen value refuses it, and noted
 * (`runAlone`), as is a question to Immer about the draft it would be alone (`isDraft`).
 */
export function frozenHandler(
  path: ReadonlyArray<string | number>,
  target: object,
  wrap: (value: unknown, path: ReadonlyArray<string | number>) => unknown,
  runAlone: () => void,
): ProxyHandler<object> {
  const isArray = Array.isArray(target);
  const refuse = (): boolean => {
    runAlone();
    return false;
  };
  const member = (key: string, v: unknown): unknown =>
    v === null || typeof v !== "object"
      ? v
      : wrap(v, [...path, isArray && ARRAY_INDEX.test(key) ? Number(key) : key]);
  return {
    has: (_, key) => Reflect.has(target, key),
    ownKeys: () => Reflect.ownKeys(target),
    getPrototypeOf: () => Reflect.getPrototypeOf(target),
    get: (_, key) => {
      if (key === VIEW_TARGET) return target;
      if (key === DRAFT_STATE) runAlone(); // alone, it is a draft
      if (isArray && typeof key === "string") {
        const method = arrayMethods.get(key);
        if (method) return method;
      }
      const v: unknown = Reflect.get(target, key);
      return typeof key === "symbol" ? v : member(key, v);
    },
    // As Immer's drafts report them (writable; configurable but an array's length), which the
    // view's stand (an empty object or array) allows; a member as its view (alone, a draft once
    // read, whose writes go through).
    getOwnPropertyDescriptor: (_, key) => {
      const desc = Reflect.getOwnPropertyDescriptor(target, key);
      if (!desc) return undefined;
      const fixed = isArray && key === "length";
      return {
        value: typeof key === "symbol" ? desc.value : member(key, desc.value),
        writable: true,
        enumerable: desc.enumerable,
        configurable: !fixed,
      };
    },
    set: refuse,
    deleteProperty: refuse,
    defineProperty: refuse,
    setPrototypeOf: refuse,
    preventExtensions: refuse,
  };
}
