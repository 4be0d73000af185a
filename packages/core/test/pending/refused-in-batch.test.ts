import { MemoryLog, type StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { injectCommand, openQueued } from "./fixtures.js";

/**
 * A pending update refused in a batch whose later updates of the same queue committed: the table
 * of applied origins then covers its identity, so it can never be told apart from a committed
 * one. Its refusal is final (a trial: the tabs' edits resolved as committed, never in the log).
 */
describe("a pending update refused beside later ones of its queue that commit", () => {
  it("is refused, not counted as committed", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    await a.update("add", { card: "x" });
    log.setOffline(true);
    const take = a.update("take", { card: "x" }); // refused once another writer took x
    const add = a.update("add", { card: "y" }); // queued after it, commits
    take.catch(() => undefined);
    await take.queued;
    await add.queued;
    injectCommand(log, "take", { card: "x" });
    // Another writer appends right after this queue's batch (a busy log): the replica's revision
    // moves while the push looks at the refusal.
    const append = log.appendConditional.bind(log);
    log.appendConditional = async (...args: Parameters<typeof append>) => {
      const stored = await append(...args);
      injectCommand(log, "add", { card: "z" });
      return stored;
    };
    log.setOffline(false);
    await add;
    const error = await take.then(
      () => undefined,
      (e: StateSyncError) => e,
    );
    expect(error?.code).toBe("UPDATE_REFUSED");
    expect(a.state.cards).toEqual(["y", "z"]);
    // In the log: the other writer's take, then the entry with "y" only.
    expect(a.pendingCount).toBe(0);
    await a.close();
  });
});

describe("a pending update that fails on a state behind the log, beside others that conflict", () => {
  it("runs again at the log's tail with them, and commits there", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setOffline(true);
    const take = a.update("take", { card: "x" }); // x is not in a's state: another writer adds it
    const add = a.update("add", { card: "y" });
    await take.queued;
    await add.queued;
    // Just before a's first append, another writer's "add x" lands: a's batch ran on a state
    // without x, so its take failed there, and its append conflicts.
    const append = log.appendConditional.bind(log);
    let first = true;
    log.appendConditional = async (...args: Parameters<typeof append>) => {
      if (first) {
        first = false;
        injectCommand(log, "add", { card: "x" });
      }
      return append(...args);
    };
    log.setOffline(false);
    await add;
    await take; // before: refused (UPDATE_REFUSED), though x was there at the log's tail
    expect(a.state.cards).toEqual(["y"]);
    await a.close();
  });
});
