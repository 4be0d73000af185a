import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel, MemoryLog, stateHash, StateSyncError } from "@statesync/core";
import { codeOf, open, until } from "./fixtures.js";

const cmd = (name: string, args: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ v: 1, kind: "command", ts: 1, seed: 7, client: "evil", name, args, ...extra });

/** Two replicas (one live, one catching up later) see the same hostile entries identically. */
async function both(log: MemoryLog) {
  const live = await open(log);
  return { live };
}

describe("hostile and malformed entries", () => {
  const malformed: Array<[string, Uint8Array | string]> = [
    ["invalid UTF-8", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])],
    ["invalid JSON", "{not json"],
    ["a JSON array", "[1,2,3]"],
    ["wrong shape", JSON.stringify({ v: 1, kind: "command", name: 5 })],
    ["unknown kind", JSON.stringify({ v: 1, kind: "teleport", ts: 1, client: "x" })],
    [
      "a patch touching __proto__",
      JSON.stringify({
        v: 1,
        kind: "update",
        base: 0,
        ts: 1,
        seed: 1,
        client: "x",
        patches: [{ op: "add", path: ["__proto__", "polluted"], value: 1 }],
      }),
    ],
    [
      "a patch touching constructor.prototype",
      JSON.stringify({
        v: 1,
        kind: "update",
        base: 0,
        ts: 1,
        seed: 1,
        client: "x",
        patches: [{ op: "add", path: ["constructor", "prototype", "x"], value: 1 }],
      }),
    ],
    [
      "100,000 levels of nesting",
      `{"v":1,"kind":"command","ts":1,"seed":1,"client":"x","name":"increment","args":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
    ],
    [
      "a second genesis",
      JSON.stringify({
        v: 1,
        kind: "genesis",
        ts: 1,
        client: "x",
        model: "counter",
        version: 1,
        initialHash: "0".repeat(64),
      }),
    ],
  ];

  for (const [name, raw] of malformed) {
    it(`skips ${name} on every replica, consuming its revision, with an error event`, async () => {
      const log = new MemoryLog();
      const { live } = await both(log);
      const bad = log.injectRaw(raw);
      await live.waitFor(bad);
      const { revision } = await live.update("increment", { by: 1 });
      expect(revision).toBe(bad + 1);
      const late = await open(log);
      expect(late.revision).toBe(revision);
      expect(late.state).toEqual(live.state);
      expect(live.state.count).toBe(1);
      expect(live.stats.entriesSkipped).toBe(1);
      expect(live.errors.map((e) => e.code)).toContain("CORRUPT_ENTRY");
      expect(live.errors.find((e) => e.code === "CORRUPT_ENTRY")?.details.revision).toBe(bad);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      await Promise.all([live.close(), late.close()]);
    });
  }

  it("applies a huge but valid array command deterministically", async () => {
    const log = new MemoryLog({ maxEntryBytes: 8 * 1024 * 1024 });
    const model = defineModel({
      name: "bag",
      state: z.object({ n: z.number() }),
      initial: { n: 0 },
      commands: {
        add: {
          args: z.object({ values: z.array(z.number()) }),
          apply: (d, a) => void (d.n += a.values.length),
        },
      },
    });
    const { createSynchronizer } = await import("@statesync/core");
    const a = await createSynchronizer({ log, model });
    const rev = log.injectRaw(cmd("add", { values: Array.from({ length: 500_000 }, (_, i) => i) }));
    await a.waitFor(rev);
    expect(a.state.n).toBe(500_000);
    await a.close();
  });

  it("stops at the last good revision on an entry of a newer format, still serving reads", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    await a.update("increment", { by: 2 });
    const bad = log.injectRaw(JSON.stringify({ v: 5, kind: "whatever" }));
    log.injectRaw(cmd("increment", { by: 100 }));
    await until(() => a.status === "stalled");
    expect(a.revision).toBe(bad - 1);
    expect(a.state.count).toBe(2);
    expect(a.stallReason?.code).toBe("UNSUPPORTED_FORMAT");
    expect(a.errors.map((e) => e.code)).toContain("UNSUPPORTED_FORMAT");
    expect(await codeOf(a.update("increment", {}))).toBe("UNSUPPORTED_FORMAT");
    expect(await codeOf(open(log))).toBe("UNSUPPORTED_FORMAT");
    await a.close();
  });

  it("stops before an unconditional command it does not know", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const bad = log.injectRaw(cmd("launchMissiles", {}));
    await until(() => a.status === "stalled");
    expect(a.revision).toBe(bad - 1);
    expect(a.stallReason?.code).toBe("UNKNOWN_COMMAND");
    await a.close();
  });

  it("applies a conditional entry with an unknown command name through its patches", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const rev = log.injectRaw(
      JSON.stringify({
        v: 1,
        kind: "update",
        base: 1,
        ts: 1,
        seed: 1,
        client: "newer",
        patches: [{ op: "replace", path: ["count"], value: 9 }],
        commands: [{ name: "fromTheFuture", args: {} }],
      }),
    );
    await a.waitFor(rev);
    expect(a.state.count).toBe(9);
    await a.close();
  });

  it("makes a throwing command a no-op on every replica, without partial mutation", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.injectRaw(cmd("increment", { by: 1 }));
    const bad = log.injectRaw(cmd("fail", {}));
    const after = log.injectRaw(cmd("increment", { by: 1 }));
    await a.waitFor(after);
    const b = await open(log);
    expect(a.state.count).toBe(2);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    expect(a.errors.find((e) => e.code === "COMMAND_FAILED")?.details.revision).toBe(bad);
    await Promise.all([a.close(), b.close()]);
  });

  it("makes a command whose stored args fail the schema a no-op", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const bad = log.injectRaw(cmd("increment", { by: "lots" }));
    await a.waitFor(bad);
    expect(a.state.count).toBe(0);
    expect(a.errors.map((e) => e.code)).toContain("VALIDATION");
    await a.close();
  });

  it("skips a conditional entry that does not chain on the revision before it", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const bad = log.injectRaw(
      JSON.stringify({
        v: 1,
        kind: "update",
        base: 0,
        ts: 1,
        seed: 1,
        client: "x",
        patches: [{ op: "replace", path: ["count"], value: 5 }],
      }),
    );
    await a.waitFor(bad);
    expect(a.state.count).toBe(0);
    expect(a.stats.entriesSkipped).toBe(1);
    await a.close();
  });

  it("makes patches that do not fit the state a no-op", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const bad = log.injectRaw(
      JSON.stringify({
        v: 1,
        kind: "update",
        base: 1,
        ts: 1,
        seed: 1,
        client: "x",
        patches: [{ op: "replace", path: ["nope", "deeper"], value: 5 }],
      }),
    );
    await a.waitFor(bad);
    expect(a.state).toEqual({ count: 0, items: [], log: [] });
    await a.close();
  });
});

describe("defineModel validation", () => {
  it("refuses schemas that admit non-JSON values", () => {
    for (const state of [
      z.object({ d: z.date() }),
      z.object({ m: z.map(z.string(), z.string()) }),
      z.object({ u: z.undefined() }),
      z.object({ b: z.bigint() }),
    ]) {
      expect(() =>
        defineModel({ name: "x", state: state as never, initial: {} as never, commands: {} }),
      ).toThrow(expect.objectContaining({ code: "VALIDATION" }));
    }
  });

  it("refuses an initial state that fails the schema, a bad name, a bad command", () => {
    const state = z.object({ n: z.number() });
    expect(() =>
      defineModel({ name: "x", state, initial: { n: "1" } as never, commands: {} }),
    ).toThrow(/initial/);
    expect(() =>
      defineModel({ name: "bad name!", state, initial: { n: 1 }, commands: {} }),
    ).toThrow(/name/);
    expect(() =>
      defineModel({ name: "x", version: -1, state, initial: { n: 1 }, commands: {} }),
    ).toThrow(/version/);
    expect(() =>
      defineModel({
        name: "x",
        state,
        initial: { n: 1 },
        commands: { c: { args: null, apply: () => {} } as never },
      }),
    ).toThrow(/command c/);
  });

  it("refuses a misspelt key, a missing definition and null commands (fresh-eyes trial)", () => {
    const state = z.object({ n: z.number() });
    const inc = { args: z.object({}), apply: (d: { n: number }) => void (d.n += 1) };
    const refused = (definition: unknown, what: RegExp) => {
      let error: unknown;
      try {
        defineModel(definition as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(StateSyncError);
      expect((error as StateSyncError).code).toBe("VALIDATION");
      expect((error as StateSyncError).message).toMatch(what);
    };
    // Before: a model without commands, a v2 without predecessor, a raw TypeError.
    refused({ name: "x", state, initial: { n: 0 }, comands: { inc } }, /comands/);
    refused({ name: "x", state, initial: { n: 0 }, commands: {}, predecesor: {} }, /predecesor/);
    refused(
      { name: "x", state, initial: { n: 0 }, commands: { inc: { ...inc, extra: 1 } } },
      /extra/,
    );
    refused({ name: "x", state, initial: { n: 0 }, commands: null }, /commands/);
    refused({ name: "x", state, initial: { n: 0 }, commands: {}, migrate: 1 }, /migrate/);
    refused(undefined, /model definition/);
    refused(null, /model definition/);
    // A model spread into a new definition still works (its initialHash is computed again).
    const m = defineModel({ name: "x", state, initial: { n: 0 }, commands: { inc } });
    expect(defineModel({ ...m, name: "y" }).name).toBe("y");
  });

  it("freezes the initial state and hashes it canonically", () => {
    const state = z.object({ a: z.number(), b: z.number() });
    const m1 = defineModel({ name: "x", state, initial: { a: 1, b: 2 }, commands: {} });
    const m2 = defineModel({ name: "x", state, initial: { b: 2, a: 1 }, commands: {} });
    expect(m1.initialHash).toBe(m2.initialHash);
    expect(Object.isFrozen(m1.initial)).toBe(true);
  });
});

describe("results Immer cannot keep (fresh-eyes trial)", () => {
  it("a recipe building a 10,000-deep value is refused with VALIDATION, and the replica goes on", async () => {
    const a = await open(new MemoryLog(), { compaction: false });
    const deep = a.update((d) => {
      let x: unknown[] = [];
      for (let i = 0; i < 10_000; i++) x = [x];
      (d as unknown as { items: unknown }).items = x;
    });
    await expect(deep).rejects.toMatchObject({ code: "VALIDATION" });
    expect(await a.update("increment", { by: 1 })).toMatchObject({ revision: 2 });
    await a.close();
  });
});
