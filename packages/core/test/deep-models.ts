import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  type MemoryLog,
  type RevisionedLog,
} from "@statesync/core";
import type { CreateSynchronizerOptions, StateSyncError } from "@statesync/core";

/**
 * Nested arrays `levels` deep (`[[[]]]` is 3), built without recursion. In the `nest` model's
 * state, `{ tree: nested(L) }` nests L + 1 levels.
 */
export function nested(levels: number): unknown[] {
  let v: unknown[] = [];
  for (let i = 1; i < levels; i++) v = [v];
  return v;
}

/** The nesting of `tree`'s first branch (`nested(L)` gives L). */
export function depthOf(tree: unknown): number {
  let d = 0;
  for (let cur = tree; Array.isArray(cur); cur = cur[0]) d++;
  return d;
}

const commands = {
  /**
   * Commands of older SDKs (formats 1 and 2, unchecked) may nest the state as deep as they like
   * (docs/guarantees.md, "Known limits"): see {@link olderCommand}. This SDK's refuse past 255.
   */
  setDepth: {
    args: z.object({ levels: z.number().int().positive() }),
    apply(d: { tree: unknown }, { levels }: { levels: number }) {
      d.tree = nested(levels);
    },
  },
  fill: {
    args: z.object({ bytes: z.number().int().nonnegative() }),
    apply(d: { blob: string }, { bytes }: { bytes: number }) {
      d.blob = "x".repeat(bytes);
    },
  },
  bump: {
    args: z.object({}),
    apply(d: { n: number }) {
      d.n += 1;
    },
  },
  /** An own `__proto__` key, which JSON keeps and every reader refuses. */
  protoKey: {
    args: z.object({}),
    apply(d: { tree: unknown }) {
      d.tree = JSON.parse('{"__proto__":{"x":1}}');
    },
  },
};

/** A state whose `tree` any command may nest, plus a blob to make it large. */
export const nest = defineModel({
  name: "nest",
  state: z.object({ tree: z.any(), blob: z.string(), n: z.number().int() }),
  initial: { tree: [], blob: "", n: 0 },
  commands,
});

/** Version 2 of `nest`: a field more. */
export const nestV2 = defineModel({
  name: "nest",
  version: 2,
  state: z.object({ tree: z.any(), blob: z.string(), n: z.number().int(), v2: z.boolean() }),
  initial: { tree: [], blob: "", n: 0, v2: true },
  commands,
  predecessor: nest,
  migrate: (s: { tree: unknown; blob: string; n: number }) => ({ ...s, v2: true }),
});

/** A `nest` replica (or of `model`) on `log` that collects its error events in `errors`. */
export async function openNest(
  log: RevisionedLog,
  extra: Partial<CreateSynchronizerOptions<any, any>> = {},
) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log,
    model: nest,
    compaction: false,
    onError: (e) => errors.push(e),
    ...extra,
  } as CreateSynchronizerOptions<any, any>);
  return Object.assign(sync, { errors });
}

/**
 * The text of an older SDK's command entry (format 2): applied unchecked on every replica
 * (docs/format.md, "Format 3"), the one way left to nest a state deeper than `MAX_STATE_DEPTH`.
 */
export const olderCommand = (name: string, args: unknown): string =>
  JSON.stringify({ v: 2, kind: "command", ts: Date.now(), seed: 1, client: "older", name, args });

/** Appends an older SDK's `setDepth({ levels })` to `log`; resolves once `sync` applied it. */
export async function olderSetDepth(
  log: MemoryLog,
  sync: { waitFor(revision: number): Promise<unknown> },
  levels: number,
): Promise<void> {
  await sync.waitFor(log.injectRaw(olderCommand("setDepth", { levels })));
}
