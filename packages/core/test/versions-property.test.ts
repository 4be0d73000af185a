import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  isStateSyncError,
  MemoryLog,
  type Model,
  type StateSynchronizer,
} from "@statesync/core";

/**
 * Issue 11, as a property: whatever the version change (fields added, removed, renamed and
 * retyped, initial states changed, commands added and removed), with entries of both versions
 * interleaved, two replicas at one revision never hold different states: they agree (a version-2
 * replica shows a version-1 state migrated up) or one of them refuses with a typed error.
 */
type FieldType = "n" | "s" | "a";
type Value = number | string | string[];
interface Field {
  name: string;
  type: FieldType;
}
type Change = "keep" | "remove" | "rename" | "retype";

const schemaOf = (t: FieldType) =>
  t === "n" ? z.number().int() : t === "s" ? z.string() : z.array(z.string());

function convert(v: Value, to: FieldType): Value {
  const from: FieldType = typeof v === "number" ? "n" : typeof v === "string" ? "s" : "a";
  if (from === to) return v;
  if (to === "s") return Array.isArray(v) ? v.join(",") : String(v);
  if (to === "n") return Array.isArray(v) ? v.length : String(v).length;
  return [String(v)];
}

const valueOf = (t: FieldType) =>
  t === "n"
    ? fc.integer({ min: -5, max: 5 })
    : t === "s"
      ? fc.string({ maxLength: 3 })
      : fc.array(fc.string({ maxLength: 2 }), { maxLength: 2 });

function modelOf(
  version: number,
  fields: Field[],
  initial: Record<string, Value>,
  extra: Record<string, unknown> = {},
): Model<Record<string, Value>, any> {
  const commands = Object.fromEntries(
    fields.map((f) => [
      `set_${f.name}`,
      {
        args: z.object({ v: schemaOf(f.type) }),
        apply(d: Record<string, Value>, a: { v: Value }) {
          d[f.name] = a.v;
        },
      },
    ]),
  );
  const state = z.strictObject(Object.fromEntries(fields.map((f) => [f.name, schemaOf(f.type)])));
  return defineModel({ name: "p", version, state, initial, commands, ...extra } as never);
}

/** A pair of versions: v1's fields, what happens to each, fields v2 adds, both initial states. */
const pairArb = fc
  .uniqueArray(
    fc.record({
      name: fc.constantFrom("a", "b", "c", "d"),
      type: fc.constantFrom<FieldType>("n", "s", "a"),
    }),
    { minLength: 1, maxLength: 3, selector: (f) => f.name },
  )
  .chain((v1Fields) =>
    fc.record({
      v1Fields: fc.constant(v1Fields),
      changes: fc.array(fc.constantFrom<Change>("keep", "remove", "rename", "retype"), {
        minLength: v1Fields.length,
        maxLength: v1Fields.length,
      }),
      added: fc.uniqueArray(
        fc.record({
          name: fc.constantFrom("x", "y"),
          type: fc.constantFrom<FieldType>("n", "s", "a"),
        }),
        { maxLength: 2, selector: (f) => f.name },
      ),
      upgrades: fc.boolean(),
      seed: fc.integer(),
    }),
  );

function buildPair(p: fc.Arbitrary<unknown> extends never ? never : any) {
  const v1Fields: Field[] = p.v1Fields;
  const v2Fields: Field[] = [];
  const source = new Map<string, { from: string; type: FieldType }>();
  v1Fields.forEach((f, i) => {
    const change: Change = p.changes[i];
    if (change === "remove") return;
    const name = change === "rename" ? `${f.name}2` : f.name;
    const type: FieldType =
      change === "retype" ? ({ n: "s", s: "a", a: "n" } as const)[f.type] : f.type;
    v2Fields.push({ name, type });
    source.set(name, { from: f.name, type });
  });
  for (const f of p.added as Field[]) v2Fields.push(f);
  const rng = fc.sample(fc.tuple(...v1Fields.map((f) => valueOf(f.type))), {
    seed: p.seed,
    numRuns: 1,
  })[0]!;
  const init1 = Object.fromEntries(v1Fields.map((f, i) => [f.name, rng[i] as Value]));
  const rng2 = fc.sample(fc.tuple(...v2Fields.map((f) => valueOf(f.type))), {
    seed: p.seed + 1,
    numRuns: 1,
  })[0]!;
  const init2 = Object.fromEntries(v2Fields.map((f, i) => [f.name, rng2[i] as Value]));
  const migrate = (s: Record<string, Value>) =>
    Object.fromEntries(
      v2Fields.map((f) => {
        const src = source.get(f.name);
        return [f.name, src ? convert(s[src.from]!, f.type) : init2[f.name]!];
      }),
    );
  const v1 = modelOf(1, v1Fields, init1);
  const upgradeCommand = p.upgrades
    ? (c: { name: string; args: unknown }) => {
        const from = c.name.slice(4);
        const to = [...source].find(([, s]) => s.from === from);
        if (!to) return undefined;
        return {
          name: `set_${to[0]}`,
          args: { v: convert((c.args as { v: Value }).v, to[1].type) },
        };
      }
    : undefined;
  const v2 = modelOf(2, v2Fields, init2, { predecessor: v1, migrate, upgradeCommand });
  return { v1, v2, v1Fields, v2Fields, migrate };
}

const opArb = fc.record({
  who: fc.integer({ min: 0, max: 3 }),
  kind: fc.constantFrom("update", "command", "fetch", "open"),
  field: fc.nat(),
  value: fc.oneof(valueOf("n"), valueOf("s"), valueOf("a")),
});

type Sync = StateSynchronizer<Record<string, Value>, any>;

describe("model versions, as a property (fast-check)", () => {
  it("replicas at one revision agree (v2 = migrate(v1)) or one refuses with a typed error", async () => {
    await fc.assert(
      fc.asyncProperty(pairArb, fc.array(opArb, { maxLength: 14 }), async (pair, ops) => {
        const { v1, v2, v1Fields, v2Fields, migrate } = buildPair(pair);
        const log = new MemoryLog();
        const models = [v1, v1, v2, v2];
        const replicas: Array<Sync | undefined> = [];
        const seen: Array<Map<number, string>> = models.map(() => new Map());
        const open = async (i: number) => {
          const sync = (await createSynchronizer({
            log: log.handle(),
            model: models[i]!,
            compaction: false,
            live: i !== 1, // replica 1 reads only when asked: it can miss the switch and write
            clientId: `r${i}`,
            onError: () => undefined,
          })) as Sync;
          sync.subscribe((state, revision) => seen[i]!.set(revision, JSON.stringify(state)));
          seen[i]!.set(sync.revision, JSON.stringify(sync.state));
          replicas[i] = sync;
        };
        await open(0);
        await open(1);
        const expectTyped = (e: unknown) => {
          if (!isStateSyncError(e)) throw e;
        };
        for (const op of ops) {
          const sync = replicas[op.who];
          if (!sync) {
            if (op.kind === "open") await open(op.who).catch(expectTyped);
            continue;
          }
          const fields = op.who < 2 ? v1Fields : v2Fields;
          const field = fields[op.field % Math.max(1, fields.length)];
          if (op.kind === "fetch") await sync.fetchUpdates().catch(expectTyped);
          else if (field && op.kind !== "open") {
            const args = { v: convert(op.value, field.type) };
            const call =
              op.kind === "update"
                ? sync.update(`set_${field.name}`, args, { outcomeTimeoutMs: 500 })
                : sync.updateUnconditionally(`set_${field.name}`, args, { outcomeTimeoutMs: 500 });
            await call.catch(expectTyped);
          }
        }
        for (const i of [2, 3]) if (!replicas[i]) await open(i).catch(expectTyped);
        for (const r of replicas) await r?.fetchUpdates().catch(expectTyped);
        const history = await replicas[2]!.history();
        const switchAt = history.find((h) => h.kind === "switch")?.revision ?? Infinity;
        // A fresh version-2 replica's view of every retained revision is the reference.
        const reference = new Map<number, string>();
        for (const h of history)
          reference.set(h.revision, JSON.stringify(await replicas[2]!.stateAt(h.revision)));
        // Version-1 replicas agree with each other directly too (a migrate that drops a field
        // would hide a difference in it).
        const v1States = new Map<number, string>();
        for (let i = 0; i < 4; i++) {
          for (const [revision, state] of seen[i]!) {
            if (i < 2 && revision !== 0) {
              expect(state).toBe(v1States.get(revision) ?? state);
              v1States.set(revision, state);
            }
            if (revision === 0) continue;
            if (i < 2) {
              // A version-1 replica never stands on or past the switch: it refuses there.
              expect(revision).toBeLessThan(switchAt);
              expect(JSON.stringify(migrate(JSON.parse(state)))).toBe(reference.get(revision));
            } else expect(state).toBe(reference.get(revision));
          }
        }
        for (let i = 0; i < 2; i++) {
          const r = replicas[i]!;
          if (r.revision < switchAt && switchAt <= log.size && r.status === "stalled") {
            expect(r.stallReason?.code).toBe("MODEL_UPGRADED");
          }
        }
        await Promise.all(replicas.map((r) => r?.close()));
      }),
      { numRuns: 60 },
    );
  });
});
