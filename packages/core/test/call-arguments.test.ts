import { describe, expect, it } from "vitest";
import {
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  rebuildStateAt,
  type StateSyncError,
} from "@statesync/core";
import { counterModel, open } from "./fixtures.js";

/**
 * Regression tests (fresh-eyes trial): the calls of a replica other than `update` read their
 * arguments as the types said. `waitFor(r, { signal: "x" })` and `synced({ signal: "x" })`
 * rejected with a raw `TypeError` ("Invalid value used as weak map key"), `synced(null)` threw
 * synchronously, and the catch-up `synced` had started rejected `CLOSED` unhandled at `close()`
 * (Node exits with status 1). `stateAt(undefined)` said `TRUNCATED`, `history(null)` threw a
 * `TypeError`, and `history({ form: 1 })` or `subscribe(fn, { optimistc: true })` did something
 * else than asked, in silence. Every such argument is now `VALIDATION`, typed, before any work.
 */

/** The error a call fails with, whether it throws or rejects. */
async function failure(call: () => unknown): Promise<StateSyncError> {
  try {
    await call();
  } catch (e) {
    return e as StateSyncError;
  }
  throw new Error("expected a failure");
}

/** Runs `body` and returns the rejections nobody handled meanwhile (reported after a turn). */
async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  try {
    await body();
    await new Promise((r) => setTimeout(r, 20));
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  return unhandled;
}

/** A log whose `info()` stops answering once `hold()` is called: a catch-up stays in flight. */
function holdingLog(): MemoryLog & { hold(): void } {
  const log = new MemoryLog();
  const info = log.info.bind(log);
  let held = false;
  log.info = () => (held ? new Promise(() => undefined) : info());
  return Object.assign(log, { hold: () => void (held = true) });
}

describe("waitFor and synced check their options before anything starts", () => {
  const bad: Array<[string, unknown, RegExp]> = [
    ["a signal that is no AbortSignal", { signal: "x" }, /signal must be an AbortSignal/],
    ["null", null, /expected object, received null/],
    ["an unknown key", { sginal: new AbortController().signal }, /Unrecognized key: "sginal"/],
    ["a number", 5, /expected object, received number/],
  ];

  it.each(bad)("%s: VALIDATION from both, as a rejection", async (_, options, message) => {
    const sync = await open();
    for (const call of [
      () => sync.synced(options as never),
      () => sync.waitFor(5, options as never),
    ]) {
      let result: Promise<unknown> | undefined;
      expect(() => (result = call() as Promise<unknown>)).not.toThrow();
      const error = await failure(() => result);
      expect([error.code, error.message]).toEqual(["VALIDATION", expect.stringMatching(message)]);
    }
    await sync.close();
  });

  it("a revision that is not a non-negative integer is VALIDATION, undefined included", async () => {
    const sync = await open();
    for (const revision of [undefined, null, -1, 1.5, "1", Number.NaN]) {
      expect((await failure(() => sync.waitFor(revision as never))).code).toBe("VALIDATION");
    }
    await sync.close();
  });

  it("good options still work: none, {}, a signal", async () => {
    const sync = await open();
    expect(await sync.synced()).toBe(1);
    expect(await sync.synced({})).toBe(1);
    const controller = new AbortController();
    expect(await sync.synced({ signal: controller.signal })).toBe(1);
    await sync.waitFor(1, { signal: controller.signal });
    await sync.waitFor(1);
    await sync.close();
  });

  it("a call refused for its options leaves no catch-up to reject unhandled at close()", async () => {
    const unhandled = await unhandledDuring(async () => {
      const log = holdingLog();
      const sync = await open(log);
      log.hold(); // a catch-up started now is still in flight at close()
      await sync.synced({ signal: "x" } as never).catch(() => undefined);
      await sync.waitFor(9, { signal: "x" } as never).catch(() => undefined);
      await sync.close();
    });
    expect(unhandled).toEqual([]);
  });

  it("not live: a waitFor refused for its options starts no catch-up either", async () => {
    const unhandled = await unhandledDuring(async () => {
      const log = holdingLog();
      const sync = await open(log, { live: false });
      log.hold();
      await sync.waitFor(9, { signal: "x" } as never).catch(() => undefined);
      await sync.close();
    });
    expect(unhandled).toEqual([]);
  });
});

describe("discard checks its id", () => {
  it("an id that is not a positive integer is VALIDATION, as a rejection", async () => {
    const sync = await open();
    for (const id of [undefined, null, 0, -1, 1.5, "1"]) {
      expect((await failure(() => sync.discard(id as never))).code).toBe("VALIDATION");
    }
    await sync.close();
  });

  it("with a queue, a good id still discards", async () => {
    const { createSynchronizer } = await import("@statesync/core");
    const sync = await createSynchronizer({
      log: new MemoryLog(),
      model: counterModel,
      pending: pendingQueue({ store: new MemoryPendingStore(), owner: "o" }),
    });
    expect(await sync.discard(12345)).toBe(false);
    await sync.close();
  });
});

describe("history and stateAt check their arguments", () => {
  it("stateAt: a revision that is not a non-negative integer is VALIDATION, never TRUNCATED", async () => {
    const log = new MemoryLog();
    const sync = await open(log);
    await sync.update("increment", { by: 2 });
    for (const revision of [undefined, null, -1, 1.5, "1", Number.NaN, 2 ** 60]) {
      const error = await failure(() => sync.stateAt(revision as never));
      expect([error.code, error.message]).toEqual([
        "VALIDATION",
        expect.stringMatching(/^stateAt's revision must be a non-negative integer/),
      ]);
      expect((await failure(() => rebuildStateAt(log, counterModel, revision as never))).code).toBe(
        "VALIDATION",
      );
    }
    expect((await sync.stateAt(2)).count).toBe(2);
    expect((await sync.stateAt(0)).count).toBe(0);
    await sync.close();
  });

  it("history: null, an unknown key (named) and bad bounds are VALIDATION", async () => {
    const sync = await open();
    await sync.update("increment", { by: 1 });
    const cases: Array<[unknown, RegExp]> = [
      [null, /expected object, received null/],
      [{ form: 1 }, /Unrecognized key: "form"/],
      [{ from: "1" }, /expected number, received string/],
      [{ to: -1 }, /Too small/],
      [{ from: 1.5 }, /expected int/],
      [7, /expected object, received number/],
    ];
    for (const [options, message] of cases) {
      const error = await failure(() => sync.history(options as never));
      expect([error.code, error.message]).toEqual(["VALIDATION", expect.stringMatching(message)]);
    }
    expect((await sync.history()).map((e) => e.revision)).toEqual([1, 2]);
    expect((await sync.history({ from: 2 })).map((e) => e.revision)).toEqual([2]);
    expect((await sync.history({ to: undefined })).map((e) => e.revision)).toEqual([1, 2]);
    await sync.close();
  });
});

describe("subscribe checks its options", () => {
  it("an unknown key (named), null or a non-boolean is VALIDATION; nothing is subscribed", async () => {
    const sync = await open();
    const heard: number[] = [];
    const cases: Array<[unknown, RegExp]> = [
      [{ optimistc: true }, /Unrecognized key: "optimistc"/],
      [null, /expected object, received null/],
      [{ optimistic: "yes" }, /expected boolean/],
    ];
    for (const [options, message] of cases) {
      const error = await failure(() => sync.subscribe((_, r) => heard.push(r), options as never));
      expect([error.code, error.message]).toEqual(["VALIDATION", expect.stringMatching(message)]);
    }
    const off = sync.subscribe((_, r) => heard.push(r), { optimistic: false });
    await sync.update("increment", { by: 1 });
    await new Promise((r) => setTimeout(r, 0));
    expect(heard).toEqual([2]); // only the subscription that was accepted
    off();
    await sync.close();
  });

  // A trial: `compact(123)`, `compact({ force: true })` and `saveSnapshot("x")` succeeded in
  // silence, as if an option had been taken.
  it("a call that takes no argument refuses one (VALIDATION), doing nothing", async () => {
    const sync = await open();
    await sync.update("increment", { by: 1 });
    const revision = sync.revision;
    const calls: Array<[string, () => unknown]> = [
      ["compact", () => (sync.compact as (x: unknown) => unknown)(123)],
      ["compact", () => (sync.compact as (x: unknown) => unknown)({ force: true })],
      ["saveSnapshot", () => (sync.saveSnapshot as (x: unknown) => unknown)("x")],
      ["flush", () => (sync.flush as (x: unknown) => unknown)(undefined)],
      ["clearPending", () => (sync.clearPending as (x: unknown) => unknown)({})],
      ["rebindPending", () => (sync.rebindPending as (x: unknown) => unknown)(1)],
    ];
    for (const [name, call] of calls) {
      const error = await failure(call);
      expect([error.code, error.message]).toEqual([
        "VALIDATION",
        `${name}() takes no arguments (given 1)`,
      ]);
    }
    expect(sync.revision).toBe(revision); // no compaction written
    await expect(sync.compact()).resolves.toBeDefined();
    await sync.close();
  });
});
