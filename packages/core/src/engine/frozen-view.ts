import { isDraft } from "immer";
import { VIEW_TARGET } from "../current.js";

/*
 * A `TouchRecorder`'s views of frozen values (touch-recorder.ts): in a draft shared by several
 * recipes, what an earlier recipe wrote is frozen (`freezeWritten`), where a draft of its own
 * would hand the recipe a draft of it. The view reads as that draft would, and refuses and notes
 * every write, so the recipe runs again alone. A scan reads one per element, in every recipe:
 * each view is one object of shared traps (with closures per view, the optimistic view of 1,000
 * queued updates that each scan what the ones before added took about 4 times as long).
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

/** What a frozen value's view needs of the `TouchRecorder` that made it. */
export interface FrozenViewHost {
  /** The view of a value that is not frozen (or a draft) at `path`. */
  wrap(value: unknown, path: ReadonlyArray<string | number>): unknown;
  /** Notes `view` as the view of `target` (for `unwrap`). */
  adopt(view: object, target: object): void;
  /** Notes that the recipe must run again alone (a write refused, a question to Immer). */
  runAlone(): void;
}

/**
 * The view of `target`, a frozen value at `path` (not a draft): read as a draft of it reads
 * (members as views; writable; the view itself not frozen: what a recipe alone sees of the same
 * value); every write refused, as the frozen value refuses it, and noted (`runAlone`), as is a
 * question to Immer about the draft it would be alone (`isDraft`). It stands on an empty object
 * or array (a frozen target would bind the view to its values).
 */
export function frozenView(
  target: object,
  path: ReadonlyArray<string | number>,
  host: FrozenViewHost,
): object {
  return newView(new FrozenTraps(target, host, path));
}

/** A view on `traps`, noted by its host. */
function newView(traps: FrozenTraps): object {
  const view = new Proxy(traps.isArray ? [] : {}, traps);
  traps.host.adopt(view, traps.target);
  return view;
}

/**
 * The traps of {@link frozenView}, one object per view (its methods shared): a scan of a frozen
 * array makes a view per element, in every recipe that reads it.
 */
class FrozenTraps implements ProxyHandler<object> {
  readonly isArray: boolean;
  /** The views of its members by key: the same view each time, as a draft's members are. */
  private members: Map<string, unknown> | undefined;

  /** At `path`, or (a member's view) at `key` of the view of `parent`. */
  constructor(
    readonly target: object,
    readonly host: FrozenViewHost,
    private path?: ReadonlyArray<string | number>,
    private readonly parent?: FrozenTraps,
    private readonly key?: string,
  ) {
    this.isArray = Array.isArray(target);
  }

  has(_: object, key: string | symbol): boolean {
    return Reflect.has(this.target, key);
  }

  ownKeys(): ArrayLike<string | symbol> {
    return Reflect.ownKeys(this.target);
  }

  getPrototypeOf(): object | null {
    return Reflect.getPrototypeOf(this.target);
  }

  get(_: object, key: string | symbol): unknown {
    if (key === VIEW_TARGET) return this.target;
    if (key === DRAFT_STATE) this.host.runAlone(); // alone, it is a draft
    if (this.isArray && typeof key === "string") {
      const method = arrayMethods.get(key);
      if (method) return method;
    }
    const v: unknown = Reflect.get(this.target, key);
    return typeof key === "symbol" ? v : this.member(key, v);
  }

  // As Immer's drafts report them (writable; configurable but an array's length), which the
  // view's stand allows; a member read before as its view (alone, a draft once read, whose
  // writes go through; one not read is the frozen value alone too).
  getOwnPropertyDescriptor(_: object, key: string | symbol): PropertyDescriptor | undefined {
    const desc = Reflect.getOwnPropertyDescriptor(this.target, key);
    if (!desc) return undefined;
    const read = typeof key === "string" ? this.members?.get(key) : undefined;
    return {
      value: read ?? desc.value,
      writable: true,
      enumerable: desc.enumerable,
      configurable: !(this.isArray && key === "length"),
    };
  }

  set(): boolean {
    return this.refuse();
  }

  deleteProperty(): boolean {
    return this.refuse();
  }

  defineProperty(): boolean {
    return this.refuse();
  }

  setPrototypeOf(): boolean {
    return this.refuse();
  }

  preventExtensions(): boolean {
    return this.refuse();
  }

  private refuse(): boolean {
    this.host.runAlone();
    return false;
  }

  /** Its path in the draft, worked out when first asked (a member's view rarely needs it). */
  private pathOf(): ReadonlyArray<string | number> {
    return (this.path ??= this.parent!.memberPath(this.key!));
  }

  /** The path of its member at `key`. */
  private memberPath(key: string): Array<string | number> {
    return [...this.pathOf(), this.isArray && ARRAY_INDEX.test(key) ? Number(key) : key];
  }

  /** The member `v` at `key`, as its view when it is an object. */
  private member(key: string, v: unknown): unknown {
    if (v === null || typeof v !== "object") return v;
    const known = this.members?.get(key);
    if (known !== undefined) return known;
    // Frozen all through, but for what a recipe froze itself, shallowly: the host wraps that.
    const view =
      !isDraft(v) && Object.isFrozen(v)
        ? newView(new FrozenTraps(v, this.host, undefined, this, key))
        : this.host.wrap(v, this.memberPath(key));
    (this.members ??= new Map()).set(key, view);
    return view;
  }
}
