import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  stateHash,
  StateSyncError,
} from "@statesync/core";
import { codeOf, counterModel, open, until } from "./fixtures.js";

describe("StateSynchronizer on MemoryLog", () => {
  it("writes one genesis entry and starts at the initial state", async () => {
    const log = new MemoryLog();
    const [a, b] = await Promise.all([open(log), open(log)]);
    expect(log.size).toBe(1);
    expect(a.revision).toBe(1);
    expect(b.revision).toBe(1);
    expect(a.state).toEqual({ count: 0, items: [], log: [] });
    expect(a.status).toBe("live");
    await Promise.all([a.close(), b.close()]);
  });

  it("applies a conditional recipe on every replica and returns the recipe's result", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const b = await open(log);
    const r = await a.update((draft) => {
      draft.count = 5;
      return "done";
    });
    expect(r).toMatchObject({ revision: 2, result: "done", attempts: 1 });
    expect(r.state.count).toBe(5);
    expect(a.state.count).toBe(5);
    expect(Object.isFrozen(a.state)).toBe(true);
    await b.waitFor(2);
    expect(b.state).toEqual(a.state);
    await Promise.all([a.close(), b.close()]);
  });

  it("runs named commands conditionally and unconditionally", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const b = await open(log);
    await a.update("increment", { by: 3 });
    const { revision } = await b.updateUnconditionally("increment", { by: 4 });
    await a.waitFor(revision);
    await b.waitFor(revision);
    expect(a.state.count).toBe(7);
    expect(b.state.count).toBe(7);
    await Promise.all([a.close(), b.close()]);
  });

  it("gives recipes the same deterministic context on every replica", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "alpha" });
    const b = await open(log, { clientId: "beta" });
    const { revision } = await a.updateUnconditionally("stamp", {});
    await b.waitFor(revision);
    await a.waitFor(revision);
    expect(a.state.log).toHaveLength(1);
    expect(a.state.log[0]).toMatch(/^alpha:\d+:0\.\d{6}:1$/);
    expect(b.state.log).toEqual(a.state.log);
    await Promise.all([a.close(), b.close()]);
  });

  it("appends nothing for a recipe that changes nothing", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const r = await a.update(() => 42);
    expect(r).toMatchObject({ revision: 1, result: 42 });
    expect(log.size).toBe(1);
    expect(a.stats.appends).toBe(0);
    await a.close();
  });

  it("runs a recipe that changes nothing again on the latest state when its replica was behind", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const b = await open(log, { live: false });
    await a.update("increment", { by: 1 });
    expect(b.revision).toBe(1); // b has not seen a's update
    const runs: number[] = [];
    const r = await b.update((draft) => {
      runs.push(draft.count);
      return draft.count; // reads only: no patches, nothing to append
    });
    expect(runs).toEqual([0, 1]); // once on the stale state, once after catching up
    expect(r).toMatchObject({ revision: 2, result: 1, attempts: 2 });
    expect(log.size).toBe(2);
    expect(b.stats.appends).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });

  it("rejects a recipe that changes nothing with UNAVAILABLE while the log is unreachable", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setOffline(true);
    expect(await codeOf(a.update(() => 1))).toBe("UNAVAILABLE");
    log.setOffline(false);
    expect(await a.update(() => 1)).toMatchObject({ revision: 1, result: 1, attempts: 1 });
    await a.close();
  });

  it("rejects an update with what its recipe or command threw, unchanged, appending nothing", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const err = await a.update("fail", {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe("recipe failed on purpose");
    const mine = new RangeError("mine");
    expect(
      await a
        .update(() => {
          throw mine;
        })
        .catch((e: unknown) => e),
    ).toBe(mine);
    expect(log.size).toBe(1);
    expect(a.state.count).toBe(0);
    await a.close();
  });

  it("rejects an async recipe with VALIDATION and appends nothing", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    expect(
      await codeOf(
        // @ts-expect-error async recipes are a type error too (types.typecheck.ts)
        a.update(async (draft) => {
          draft.count = 1;
        }),
      ),
    ).toBe("VALIDATION");
    expect(log.size).toBe(1);
    await a.close();
  });

  it("rejects invalid command arguments and unknown commands before appending", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    expect(await codeOf(a.update("increment", { by: "x" as never }))).toBe("VALIDATION");
    expect(await codeOf(a.updateUnconditionally("push", { item: 5 as never }))).toBe("VALIDATION");
    expect(await codeOf(a.update("nope" as never, {} as never))).toBe("UNKNOWN_COMMAND");
    expect(await codeOf(a.update(undefined as never))).toBe("VALIDATION");
    expect(await codeOf(a.update((d) => void (d.count = 1), { maxAttempts: 0 }))).toBe(
      "VALIDATION",
    );
    expect(log.size).toBe(1);
    await a.close();
  });

  it("rejects a recipe whose result fails the state schema", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    expect(
      await codeOf(
        a.update((draft) => {
          (draft as { count: unknown }).count = "seven";
        }),
      ),
    ).toBe("VALIDATION");
    expect(
      await codeOf(
        a.update((draft) => {
          (draft as { count: unknown }).count = Number.NaN;
        }),
      ),
    ).toBe("VALIDATION");
    expect(log.size).toBe(1);
    expect(a.state.count).toBe(0);
    await a.close();
  });

  it("retries on conflict and re-runs the recipe on the newer state", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    const b = await open(log, { live: false });
    await b.update("increment", { by: 10 });
    let runs = 0;
    const r = await a.update((draft) => {
      runs += 1;
      draft.count = draft.count * 2 + 1;
    });
    expect(r.attempts).toBe(2);
    expect(runs).toBe(2);
    expect(a.state.count).toBe(21);
    expect(a.stats.conflicts).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });

  it("queues concurrent updates of one client and may share one append", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => a.update((d) => void d.items.push(`i${i}`))),
    );
    expect(a.state.items).toEqual(Array.from({ length: 20 }, (_, i) => `i${i}`));
    expect(a.stats.conflicts).toBe(0);
    expect(log.size).toBeLessThan(21);
    for (const r of results) expect(r.attempts).toBe(1);
    await a.close();
  });

  it("fails with RETRY_LIMIT after maxAttempts conflicts", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    const b = await open(log, { live: false });
    let runs = 0;
    const p = a.update(
      (draft) => {
        runs += 1;
        draft.count += 1;
        // another writer always gets there first
        log.injectRaw(
          JSON.stringify({
            v: 1,
            kind: "command",
            ts: 1,
            seed: 1,
            client: "x",
            name: "increment",
            args: { by: 1 },
          }),
        );
      },
      { maxAttempts: 3 },
    );
    expect(await codeOf(p)).toBe("RETRY_LIMIT");
    expect(runs).toBe(3);
    await Promise.all([a.close(), b.close()]);
  });

  it("stops retrying when the signal aborts", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    const controller = new AbortController();
    const p = a.update(
      (draft) => {
        draft.count += 1;
        log.injectRaw(
          JSON.stringify({
            v: 1,
            kind: "command",
            ts: 1,
            seed: 1,
            client: "x",
            name: "increment",
            args: { by: 1 },
          }),
        );
        controller.abort();
      },
      { signal: controller.signal },
    );
    expect(await codeOf(p)).toBe("ABORTED");
    await a.close();
  });

  it("notifies subscribers after batches, not on subscribe, and reports a throwing listener", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const seen: number[] = [];
    a.subscribe((_s, rev) => seen.push(rev));
    a.subscribe(() => {
      throw new Error("bad listener");
    });
    expect(seen).toEqual([]);
    await a.update("increment", { by: 1 });
    await until(() => seen.length > 0);
    expect(seen.at(-1)).toBe(2);
    expect(a.errors.some((e) => e.code === "LISTENER_FAILED")).toBe(true);
    await a.close();
  });

  it("rejects calls after close with CLOSED", async () => {
    const a = await open();
    const statuses: string[] = [];
    a.on("status", (s) => statuses.push(s));
    await a.close();
    expect(a.status).toBe("closed");
    expect(statuses).toEqual(["closed"]);
    expect(await codeOf(a.update("increment", {}))).toBe("CLOSED");
    expect(await codeOf(a.updateUnconditionally("increment", {}))).toBe("CLOSED");
    expect(await codeOf(a.fetchUpdates())).toBe("CLOSED");
    expect(await codeOf(a.saveSnapshot())).toBe("CLOSED");
    await a.close();
  });

  it("refuses a log created by another model or another initial state", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    await a.close();
    const other = defineModel({ name: "other", state: z.object({}), initial: {}, commands: {} });
    expect(await codeOf(createSynchronizer({ log, model: other }))).toBe("MODEL_MISMATCH");
    const changed = defineModel({ ...counterModel, initial: { count: 1, items: [], log: [] } });
    expect(await codeOf(createSynchronizer({ log, model: changed }))).toBe("MODEL_MISMATCH");
    // Issue 11: a next version without a predecessor used to open the log and diverge.
    const nextVersion = defineModel({
      ...counterModel,
      version: 2,
      initial: { count: 1, items: [], log: [] },
    });
    expect(await codeOf(createSynchronizer({ log, model: nextVersion }))).toBe("MODEL_MISMATCH");
    const migrated = defineModel({
      ...nextVersion,
      predecessor: counterModel,
      migrate: (s: typeof counterModel.initial) => ({ ...s, count: s.count + 1 }),
    });
    const ok = await createSynchronizer({ log, model: migrated });
    expect(ok.revision).toBe(2); // it switched the log: a switch entry at revision 2
    expect(ok.state.count).toBe(1);
    await ok.close();
  });

  it("validates createSynchronizer options", async () => {
    expect(await codeOf(createSynchronizer({ log: {} as never, model: counterModel }))).toBe(
      "VALIDATION",
    );
    expect(await codeOf(createSynchronizer({ log: new MemoryLog(), model: {} as never }))).toBe(
      "VALIDATION",
    );
    expect(
      await codeOf(
        createSynchronizer({ log: new MemoryLog(), model: counterModel, snapshotEvery: -1 }),
      ),
    ).toBe("VALIDATION");
  });

  it("fails with PAYLOAD_TOO_LARGE before sending", async () => {
    const log = new MemoryLog({ maxEntryBytes: 2_000 });
    const a = await open(log);
    expect(await codeOf(a.update((d) => void d.items.push("x".repeat(5_000))))).toBe(
      "PAYLOAD_TOO_LARGE",
    );
    expect(await codeOf(a.updateUnconditionally("push", { item: "x".repeat(5_000) }))).toBe(
      "PAYLOAD_TOO_LARGE",
    );
    expect(log.size).toBe(1);
    expect(a.state.items).toEqual([]);
    await a.close();
  });

  it("fetchUpdates reads what a non-live replica missed; synced resolves to the latest revision", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    const b = await open(log);
    for (let i = 0; i < 5; i++) await b.update("increment", { by: 1 });
    expect(a.state.count).toBe(0);
    expect(await a.fetchUpdates()).toBe(6);
    expect(a.state.count).toBe(5);
    await b.updateUnconditionally("increment", { by: 1 });
    expect(await a.synced()).toBe(7);
    await b.waitFor(7);
    expect(stateHash(a.state)).toBe(stateHash(b.state));
    await Promise.all([a.close(), b.close()]);
  });
});

describe("user mistakes the engine absorbs", () => {
  it("hands back a plain copy when a recipe returns the draft", async () => {
    const a = await open();
    const r = await a.update((d) => {
      d.items.push("hi");
      return d.items;
    });
    expect(r.result).toEqual(["hi"]);
    expect(a.state.items).toEqual(["hi"]);
    await a.close();
  });

  it("reports missing command arguments as a schema failure", async () => {
    const a = await open();
    const error = await a.update("push", undefined as never).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "VALIDATION" });
    expect(String((error as Error).message)).toMatch(/invalid arguments/);
    await a.close();
  });

  it("fails with UNAVAILABLE, not UNKNOWN_OUTCOME, when nothing could be sent", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setOffline(true);
    expect(await codeOf(a.update("increment", { by: 1 }, { outcomeTimeoutMs: 150 }))).toBe(
      "UNAVAILABLE",
    );
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(
      await codeOf(a.updateUnconditionally("increment", { by: 1 }, { signal: controller.signal })),
    ).toBe("ABORTED");
    log.setOffline(false);
    expect(log.size).toBe(1);
    await a.close();
  });

  it("stops sending as soon as the signal aborts, while waiting to re-send to an unreachable log", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    let sends = 0;
    // Unreachable with the connection not (yet) known lost: every send fails, nothing is sent.
    log.appendConditional = () => {
      sends += 1;
      const why = "the memory log is offline";
      return Promise.reject(new StateSyncError("UNAVAILABLE", why, { details: { notSent: true } }));
    };
    const controller = new AbortController();
    const pending = a.update("increment", { by: 1 }, { signal: controller.signal });
    await until(() => sends >= 3); // failed twice, now waiting to re-send
    controller.abort();
    const sent = sends;
    expect(await codeOf(pending)).toBe("ABORTED"); // nothing was ever sent
    expect(sends).toBe(sent); // and nothing after the abort
    expect(log.size).toBe(1);
    await a.close();
  });

  it("synced() resolves only once the replica stands on the log's genesis", async () => {
    const log = new MemoryLog();
    log.setOffline(true);
    const a = await open(log); // opens offline at revision 0: no genesis could be written
    expect(a.status).toBe("offline");
    expect(a.revision).toBe(0);
    log.setOffline(false);
    expect(await a.synced()).toBe(1); // the genesis, written now, not "caught up" on nothing
    expect(log.size).toBe(1);
    expect((await a.update("increment", { by: 2 })).revision).toBe(2);
    await a.close();
  });

  it("synced() honours its signal while the log is unreachable", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setOffline(true);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(await codeOf(a.synced({ signal: controller.signal }))).toBe("ABORTED");
    log.setOffline(false);
    await a.close();
  });
});

describe("client ids", () => {
  it("refuses a client id that would make message ids too long or unprintable", async () => {
    for (const clientId of ["x".repeat(65), "has space", "é"]) {
      expect(
        await codeOf(createSynchronizer({ log: new MemoryLog(), model: counterModel, clientId })),
      ).toBe("VALIDATION");
    }
    const ok = await createSynchronizer({
      log: new MemoryLog(),
      model: counterModel,
      clientId: "x".repeat(64),
    });
    await ok.update("increment", { by: 1 });
    await ok.close();
  });
});
