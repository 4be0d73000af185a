/**
 * How deep the arrays and objects of a JSON value nest, counted as the brackets of its JSON text
 * (a number or string: 0 levels, `{}`: 1, `{ "a": [] }`: 2), against a limit: the walk a
 * replica runs before it hands its state to a boundary whose readers limit the nesting
 * (`MAX_STATE_DEPTH`: local snapshots, compaction, the model switch). The same walk, told to,
 * also checks that the value is JSON, for a value that comes from outside the engine (a record
 * handed to a snapshot store).
 */

/** Containers walked between two looks at the clock in {@link nestedDeeperThanInSlices}. */
const CHECK_EVERY = 4_096;

/**
 * A walk of the containers of a value, depth first, iterative (hostile depth cannot overflow the
 * stack; the walk ends at the first container past the limit, so a cycle counts as too deep).
 * Own enumerable keys only, as `JSON.stringify` reads them; no paths (cheap). With `json`, it
 * also ends at the first member that is no JSON value, as `findJsonProblem` judges them (a
 * leaf that is not null, a boolean, a string or a finite number; an object that is not plain).
 */
class DepthWalk {
  private readonly values: object[] = [];
  private readonly depths: number[] = [];
  /** The verdict, once `step` returned true: too deep (or a cycle). */
  deeper = false;
  /** The verdict, once `step` returned true, of a walk with `json`: a member is no JSON value. */
  notJson = false;

  constructor(
    value: unknown,
    private readonly limit: number,
    private readonly json = false,
  ) {
    if (value !== null && typeof value === "object") {
      this.values.push(value);
      this.depths.push(1);
    } else if (json && !isJsonLeaf(value)) this.notJson = true;
  }

  /** Walks up to `count` containers; true once the verdict is known. */
  step(count: number): boolean {
    const { values, depths, limit, json } = this;
    for (let n = 0; n < count; n++) {
      const v = values.pop();
      if (v === undefined) return true;
      const depth = depths.pop()!;
      if (depth > limit) {
        this.deeper = true;
        return true;
      }
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const child: unknown = v[i];
          if (child !== null && typeof child === "object") {
            values.push(child);
            depths.push(depth + 1);
          } else if (json && !isJsonLeaf(child)) return this.foundNotJson();
        }
        continue;
      }
      if (json && !isPlain(v)) return this.foundNotJson();
      const keys = Object.keys(v);
      for (let i = 0; i < keys.length; i++) {
        const child: unknown = (v as Record<string, unknown>)[keys[i]!];
        if (child !== null && typeof child === "object") {
          values.push(child);
          depths.push(depth + 1);
        } else if (json && !isJsonLeaf(child)) return this.foundNotJson();
      }
    }
    return values.length === 0;
  }

  private foundNotJson(): true {
    this.notJson = true;
    return true;
  }
}

/** Whether `v`, no array or object, is a JSON value: null, a boolean, a string, a finite number. */
const isJsonLeaf = (v: unknown): boolean =>
  v === null ||
  typeof v === "string" ||
  typeof v === "boolean" ||
  (typeof v === "number" && Number.isFinite(v));

/** Whether the object `v` (no array) is plain: made by `{}` or `Object.create(null)`. */
function isPlain(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** True when the arrays and objects of `value`, a JSON value, nest deeper than `limit` levels. */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const walk = new DepthWalk(value, limit);
  walk.step(Infinity);
  return walk.deeper;
}

/** What {@link jsonNestingFault} finds wrong: too deep (or a cycle), or no JSON value. */
export type JsonNestingFault = "deeper" | "not-json" | undefined;

const verdict = (walk: DepthWalk): JsonNestingFault =>
  walk.deeper ? "deeper" : walk.notJson ? "not-json" : undefined;

/**
 * What is wrong with `value` as JSON nested at most `limit` levels: `"deeper"` (or it contains
 * itself), `"not-json"` (a member that is no JSON value, as `findJsonProblem` judges them), or
 * undefined. The cheap walk of {@link nestedDeeperThan}, without paths: `findJsonProblem` says
 * where, once this found something.
 */
export function jsonNestingFault(value: unknown, limit: number): JsonNestingFault {
  const walk = new DepthWalk(value, limit, true);
  walk.step(Infinity);
  return verdict(walk);
}

/**
 * How deep the arrays and objects of `value` nest (as {@link nestedDeeperThan} counts them), or
 * Infinity when it contains itself. Iterative, and each container is measured once (a value in
 * many places costs what it costs in one), so it is linear in the value's size: for error
 * messages, after a bounded walk found a value too deep.
 */
export function nestingDepth(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  /** The depth below each container measured so far (1 for `{}`). */
  const measured = new Map<object, number>();
  /** The containers on the path being walked (a cycle returns to one of them). */
  const open = new Set<object>();
  const stack: Array<{ v: object; exit: boolean }> = [{ v: value, exit: false }];
  while (stack.length > 0) {
    const { v, exit } = stack.pop()!;
    if (exit) {
      let below = 0;
      for (const child of childObjects(v)) below = Math.max(below, measured.get(child) ?? 0);
      measured.set(v, below + 1);
      open.delete(v);
      continue;
    }
    if (measured.has(v)) continue;
    if (open.has(v)) return Infinity;
    open.add(v);
    stack.push({ v, exit: true });
    for (const child of childObjects(v)) {
      if (!measured.has(child)) stack.push({ v: child, exit: false });
    }
  }
  return measured.get(value)!;
}

/** The members of `v` that are arrays or objects (own enumerable keys, as JSON reads them). */
function childObjects(v: object): object[] {
  const out: object[] = [];
  const members: unknown[] = Array.isArray(v)
    ? v
    : Object.keys(v).map((k) => (v as Record<string, unknown>)[k]);
  for (let i = 0; i < members.length; i++) {
    const child = members[i];
    if (child !== null && typeof child === "object") out.push(child);
  }
  return out;
}

/**
 * {@link nestedDeeperThan} in slices of about `sliceMs` of work, giving the event loop a turn
 * between them, so that the walk of a state of many megabytes never blocks a page for long (as
 * the browser's snapshot encoder does). `value` must not change meanwhile (a replica's state is
 * frozen).
 */
export async function nestedDeeperThanInSlices(
  value: unknown,
  limit: number,
  sliceMs = 8,
): Promise<boolean> {
  const walk = new DepthWalk(value, limit);
  await walkInSlices(walk, sliceMs);
  return walk.deeper;
}

/** {@link jsonNestingFault} in slices, as {@link nestedDeeperThanInSlices} walks. */
export async function jsonNestingFaultInSlices(
  value: unknown,
  limit: number,
  sliceMs = 8,
): Promise<JsonNestingFault> {
  const walk = new DepthWalk(value, limit, true);
  await walkInSlices(walk, sliceMs);
  return verdict(walk);
}

/** Runs `walk` to its verdict, giving the event loop a turn about every `sliceMs`. */
async function walkInSlices(walk: DepthWalk, sliceMs: number): Promise<void> {
  let sliceStart = Date.now();
  while (!walk.step(CHECK_EVERY)) {
    if (Date.now() - sliceStart >= sliceMs) {
      await yieldToEventLoop();
      sliceStart = Date.now();
    }
  }
}

/**
 * Gives the event loop a turn: `scheduler.yield()` where there is one, else a message task (not
 * throttled in a hidden tab, unlike timers), else a timer.
 */
function yieldToEventLoop(): Promise<void> {
  const g = globalThis as {
    scheduler?: { yield?: () => Promise<void> };
    MessageChannel?: new () => {
      port1: { onmessage: (() => void) | null; close(): void };
      port2: { postMessage(message: unknown): void };
    };
  };
  if (typeof g.scheduler?.yield === "function") return g.scheduler.yield();
  return new Promise((resolve) => {
    if (g.MessageChannel === undefined) return void setTimeout(resolve, 0);
    const channel = new g.MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(undefined);
  });
}
