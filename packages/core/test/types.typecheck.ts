import { z } from "zod";
import type { Draft } from "immer";
import {
  defineModel,
  MemoryLog,
  createSynchronizer,
  type CommandMap,
  type CreateSynchronizerOptions,
  type OpenJetStreamOptions,
  type PendingUpdate,
  type QueuedInfo,
  MemoryPendingStore,
  pendingQueue,
  type SynchronizerOf,
  type Model,
  type CommandSchemas,
  type CommandsOf,
  type StateSynchronizer,
  type Recipe,
} from "@statesync/core";
const m = defineModel({
  name: "t",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {
    inc: {
      args: z.object({ by: z.number() }),
      apply(d, a) {
        // @ts-expect-error args are typed: by is a number
        const wrong: string = a.by;
        void wrong;
        d.n += a.by;
      },
    },
  },
});
async function f() {
  const s: SynchronizerOf<typeof m> = await createSynchronizer({ log: new MemoryLog(), model: m });
  await s.update("inc", { by: 1 });
  // @ts-expect-error wrong arg type
  await s.update("inc", { by: "x" });
  // @ts-expect-error unknown command
  await s.update("nope", {});
}
void f;

// The offline queue: `queued` beside the outcome, the optimistic view and the pending list.
async function g() {
  const s: SynchronizerOf<typeof m> = await createSynchronizer({
    log: new MemoryLog(),
    model: m,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner: "device" }),
  });
  const p = s.update("inc", { by: 1 });
  const info: QueuedInfo = await p.queued;
  const durable: boolean = info.durable;
  const { revision } = await p;
  const n: number = s.optimisticState.n + revision;
  const first: PendingUpdate | undefined = s.pending[0];
  s.subscribe((state) => void state.n, { optimistic: true });
  // @ts-expect-error the optimistic view is as immutable as the state
  s.optimisticState.n = 1;
  void [durable, n, first];
}
void g;

// openJetStreamSynchronizer takes every createSynchronizer option but the log's own (an option
// listed there by hand was once dropped at run time: `upgrade`).
type NotForwarded = Exclude<
  keyof CreateSynchronizerOptions<unknown, CommandMap<unknown>>,
  keyof OpenJetStreamOptions<unknown, CommandMap<unknown>>
>;
const everyOptionForwarded: [NotForwarded] extends ["log" | "ownsLog" | "onClose"] ? true : false =
  true;
void everyOptionForwarded;

// Recipes must be synchronous: an async one (or one returning any promise) is a type error, not
// only a VALIDATION error at run time. Ordinary recipes keep working.
async function recipes() {
  const s: SynchronizerOf<typeof m> = await createSynchronizer({ log: new MemoryLog(), model: m });
  // @ts-expect-error an async recipe
  await s.update(async (d) => {
    d.n += 1;
  });
  // @ts-expect-error a recipe returning a promise
  await s.update((d) => Promise.resolve(d.n));
  // @ts-expect-error a recipe that may return a promise
  await s.update((d) => (d.n > 0 ? Promise.resolve(1) : 2));
  const thenable = { then: (resolve: (v: number) => void) => resolve(1) };
  // @ts-expect-error a recipe returning a thenable
  await s.update(() => thenable);
  const asyncRecipe = async (d: Draft<{ n: number }>): Promise<void> => {
    d.n += 1;
  };
  // @ts-expect-error an async recipe typed separately
  await s.update(asyncRecipe);

  await s.update((d) => {
    d.n += 1;
  });
  const { result } = await s.update((d) => d.n * 2);
  const doubled: number = result;
  await s.update(() => ({ n: 5 }));
  const typed: (d: Draft<{ n: number }>) => void = (d) => {
    d.n = 0;
  };
  await s.update(typed);
  const anyResult = await s.update(() => JSON.parse("1") as any);
  await s.update((d, ctx) => void (d.n = ctx.revision), { maxAttempts: 3 });
  const recipe: Recipe<{ n: number }, string> = (d) => String(d.n);
  const { result: text } = await s.update(recipe);
  const str: string = text;
  void [doubled, anyResult, str];
}
void recipes;

// A model's state and command arguments are JSON: a schema whose output (state) or input
// (arguments, what is stored in the entry) holds no JSON value is a type error, not only a
// VALIDATION error at run time. JSON schemas of every shape keep working.
const noCommands = {};
defineModel({
  name: "d",
  // @ts-expect-error a Date in the state
  state: z.object({ at: z.date() }),
  initial: { at: new Date(0) },
  commands: noCommands,
});
defineModel({
  name: "d",
  // @ts-expect-error a Map deep in the state
  state: z.object({ a: z.array(z.object({ m: z.map(z.string(), z.number()) })) }),
  initial: { a: [] },
  commands: noCommands,
});
defineModel({
  name: "d",
  // @ts-expect-error a Set
  state: z.set(z.string()),
  initial: new Set<string>(),
  commands: noCommands,
});
defineModel({
  name: "d",
  // @ts-expect-error a bigint
  state: z.object({ n: z.bigint() }),
  initial: { n: 0n },
  commands: noCommands,
});
defineModel({
  name: "d",
  // @ts-expect-error a property whose value may be undefined (not merely optional)
  state: z.object({ u: z.union([z.string(), z.undefined()]) }),
  initial: { u: "" },
  commands: noCommands,
});
defineModel({
  name: "d",
  // @ts-expect-error a function
  state: z.object({ f: z.function() }),
  initial: { f: () => 1 },
  commands: noCommands,
});
defineModel({
  name: "d",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {
    at: {
      // @ts-expect-error a command whose arguments (what the entry stores) hold a Date
      args: z.object({ at: z.date() }),
      apply(d, a) {
        d.n = a.at.getTime();
      },
    },
  },
});
interface TreeNode {
  name: string;
  children: TreeNode[];
}
const treeNode: z.ZodType<TreeNode> = z.lazy(() =>
  z.object({ name: z.string(), children: z.array(treeNode) }),
);
const json = defineModel({
  name: "j",
  state: z.object({
    any: z.any(),
    unknown: z.unknown(),
    optional: z.string().optional(),
    nullable: z.number().nullable(),
    record: z.record(z.string(), z.object({ on: z.boolean() })),
    union: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("a"), a: z.string() }),
      z.object({ kind: z.literal("b"), b: z.array(z.number()) }),
    ]),
    tuple: z.tuple([z.string(), z.number()]),
    enum: z.enum(["x", "y"]),
    tree: treeNode,
    json: z.json(),
    loose: z.looseObject({ k: z.string() }),
    readonly: z.object({ r: z.string() }).readonly(),
    branded: z.string().brand<"Id">(),
    defaulted: z.number().default(1),
  }),
  initial: {
    any: 1,
    unknown: null,
    nullable: null,
    record: {},
    union: { kind: "a", a: "" },
    tuple: ["", 0],
    enum: "x",
    tree: { name: "", children: [] },
    json: null,
    loose: { k: "" },
    readonly: { r: "" },
    branded: "" as string & z.$brand<"Id">,
    defaulted: 1,
  },
  commands: {
    set: {
      args: z.object({
        when: z.iso.datetime(),
        opt: z.string().optional(),
        rec: z.record(z.string(), z.unknown()),
      }),
      apply(d, a) {
        d.optional = a.when;
      },
    },
    // Arguments are stored as given: a transform to a Date is fine (apply gets the output).
    parsed: {
      args: z.object({ at: z.string().transform((s) => new Date(s)) }),
      apply(d, a) {
        d.nullable = a.at.getTime();
      },
    },
  },
});
void json;
defineModel({ name: "a", state: z.any(), initial: 1, commands: noCommands });
defineModel({ name: "u", state: z.unknown(), initial: 1, commands: noCommands });
defineModel({ name: "r", state: z.array(z.string()), initial: [], commands: noCommands });
defineModel({ name: "p", state: z.string().nullable(), initial: null, commands: noCommands });

// StateSynchronizer takes the state type; a model's synchronizer is SynchronizerOf<typeof model>.
// type-messages.test.ts reads the message the wrong guess gets.
async function synchronizerTypes() {
  const s = await createSynchronizer({ log: new MemoryLog(), model: m });
  // @ts-expect-error a model where the state type belongs
  const wrong: StateSynchronizer<typeof m> = s;
  const byModel: SynchronizerOf<typeof m> = s;
  const byState: StateSynchronizer<{ n: number }, typeof m.commands> = s;
  const loose: StateSynchronizer<any, any> = s;
  const stateOf = <S, C extends CommandMap<S>>(x: StateSynchronizer<S, C>) => x.state;
  const n: number = stateOf(s).n;
  void [wrong, byModel, byState, loose, n];
}
void synchronizerTypes;

// Functions generic in the state or the commands still call defineModel: the JSON check applies
// where the types are known (a generic state is not refused).
function modelOf<S>(state: z.ZodType<S>, initial: S) {
  return defineModel({ name: "g", state, initial, commands: {} });
}
const generic: Model<{ k: string }> = modelOf(z.object({ k: z.string() }), { k: "" });
function modelWith<S, A extends CommandSchemas>(
  state: z.ZodType<S>,
  initial: S,
  commands: CommandsOf<S, A>,
) {
  return defineModel({ name: "g", state, initial, commands });
}
const genericCommands = modelWith(
  z.object({ k: z.string() }),
  { k: "" },
  {
    set: {
      args: z.string(),
      apply(d, k) {
        d.k = k;
      },
    },
  },
);
void [generic, genericCommands];
