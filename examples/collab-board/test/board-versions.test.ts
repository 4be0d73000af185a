import {
  createSynchronizer,
  MemoryLog,
  MemoryPendingStore,
  MemorySnapshotStore,
  pendingQueue,
  type Model,
  type StateSyncError,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { boardProblem } from "../src/board-check.js";
import { migrateBoardV1 } from "../src/board-migrate.js";
import { boardModelV1, type BoardV1 } from "../src/board-model-v1.js";
import { boardLists, boardModel, boardSchema } from "../src/board-model.js";

/*
 * Version 2 of the board (cards by id, with an index) replaces version 1 (cards inside the
 * lists): a log, a local snapshot and an offline queue written by the version-1 app open in the
 * version-2 app, migrated, and the log switches to version 2 once (docs/versions.md).
 */

function open<S>(log: MemoryLog, model: Model<S, any>, extra: Record<string, unknown> = {}) {
  return createSynchronizer({ log: log.handle(), model, compaction: false, ...extra });
}

/** A version-1 board as its app leaves it: two lists with cards, one moved, one list added. */
async function writeV1(log: MemoryLog, extra: Record<string, unknown> = {}) {
  const old = await open(log, boardModelV1, extra);
  await old.update("addCard", { id: "x", listId: "todo", title: "X" });
  await old.update("addCard", { id: "y", listId: "todo", title: "Y" });
  await old.update("addList", { id: "later", title: "Later" });
  await old.update("moveCard", { cardId: "x", toListId: "doing", beforeCardId: null });
  return old;
}

const written = {
  todo: ["y"],
  doing: ["x"],
  done: [],
  later: [],
};

/** The card ids of each list, `{ listId: [cardIds] }`. */
const where = (board: Parameters<typeof boardLists>[0]) =>
  Object.fromEntries(boardLists(board).map((l) => [l.id, l.cards.map((c) => c.id)]));

describe("the board's model versions", () => {
  it("migrates version 1's board: same lists and cards in order, duplicate and reserved ids renamed", () => {
    const v1: BoardV1 = {
      lists: [
        {
          id: "a",
          title: "A",
          cards: [
            { id: "c", title: "C1" },
            { id: "renamed-1", title: "R" },
          ],
        },
        { id: "a", title: "A again", cards: [{ id: "c", title: "C2" }] },
        { id: "__proto__", title: "P", cards: [{ id: "constructor", title: "K" }] },
        { id: "c", title: "List c", cards: [] }, // a list and a card may share an id
      ],
    };
    const v2 = migrateBoardV1(v1);
    expect(v2.listIds).toEqual(["a", "renamed-2", "renamed-4", "c"]);
    expect(boardLists(v2)).toEqual([
      {
        id: "a",
        title: "A",
        cards: [
          { id: "c", title: "C1" },
          { id: "renamed-1", title: "R" },
        ],
      },
      { id: "renamed-2", title: "A again", cards: [{ id: "renamed-3", title: "C2" }] },
      { id: "renamed-4", title: "P", cards: [{ id: "renamed-5", title: "K" }] },
      { id: "c", title: "List c", cards: [] },
    ]);
    expect(Object.getPrototypeOf(v2.lists)).toBe(Object.prototype);
    expect(boardProblem(v2)).toBeUndefined();
    expect(boardSchema.safeParse(v2).success).toBe(true);
    expect(migrateBoardV1(v1)).toEqual(v2); // deterministic
    expect(migrateBoardV1(boardModelV1.initial)).toEqual(boardModel.initial);
  });

  it("switches a version-1 log once; version-1 replicas stop there, later ones start from it", async () => {
    const log = new MemoryLog();
    const old = await writeV1(log);
    const before = old.revision;
    const errors: StateSyncError[] = [];
    old.on("error", (e) => errors.push(e));

    const upgraded = await open(log, boardModel); // writes the switch at open
    expect(upgraded.upgradePending).toBe(false);
    expect(upgraded.revision).toBe(before + 1);
    expect(upgraded.state).toEqual(migrateBoardV1(old.state as BoardV1));
    expect(where(upgraded.state)).toEqual(written);
    await upgraded.update("moveCard", { cardId: "y", toListId: "later", beforeCardId: null });
    await upgraded.update("addCard", { id: "z", listId: "todo", title: "Z" });

    await expect(old.update("deleteCard", { cardId: "y" })).rejects.toMatchObject({
      code: "MODEL_UPGRADED",
    });
    expect(old.status).toBe("stalled");
    const fresh = await open(log, boardModel);
    expect(fresh.state).toEqual(upgraded.state);
    expect(where(fresh.state)).toEqual({ ...written, todo: ["z"], later: ["y"] });
    expect(boardProblem(fresh.state)).toBeUndefined();
    await Promise.all([old.close(), upgraded.close(), fresh.close()]);
  });

  it("restores a version-1 local snapshot, migrated, before it reaches the log", async () => {
    const log = new MemoryLog();
    const snapshots = new MemorySnapshotStore();
    const old = await writeV1(log, { snapshots, snapshotKey: "board" });
    const revision = old.revision;
    await old.close(); // saves its snapshot
    log.setOffline(true);
    const upgraded = await open(log, boardModel, {
      snapshots,
      snapshotKey: "board",
      waitFor: "restored",
    });
    expect(upgraded.stats.snapshotsRestored).toBe(1);
    expect(upgraded.revision).toBe(revision);
    expect(where(upgraded.state)).toEqual(written);
    log.setOffline(false);
    await upgraded.synced();
    await upgraded.update("deleteCard", { cardId: "x" });
    expect(where(upgraded.state)).toEqual({ ...written, doing: [] });
    await upgraded.close();
  });

  it("shows and then sends the edits the version-1 app queued offline (upgradeCommand)", async () => {
    const log = new MemoryLog();
    const pending = pendingQueue({ store: new MemoryPendingStore(), owner: "board" });
    // As the page keeps them: its snapshot and its queue, both written by the version-1 app.
    const stored = { pending, snapshots: new MemorySnapshotStore(), snapshotKey: "board" };
    const old = await writeV1(log, stored);
    log.setOffline(true);
    const edits = [
      old.update("addCard", { id: "q1", listId: "done", title: "Q1" }),
      old.update("moveCard", { cardId: "y", toListId: "done", beforeCardId: "q1" }),
      old.update("renameList", { listId: "later", title: "Someday" }),
    ];
    for (const edit of edits) edit.catch(() => undefined);
    await Promise.all(edits.map((e) => e.queued));
    await old.close();

    const upgraded = await open(log, boardModel, { ...stored, waitFor: "restored" });
    const shown = { ...written, todo: [], done: ["y", "q1"] };
    expect(upgraded.pendingCount).toBe(3);
    expect(where(upgraded.optimisticState)).toEqual(shown);
    log.setOffline(false);
    await upgraded.flush();
    expect(where(upgraded.state)).toEqual(shown);
    expect(boardLists(upgraded.state).map((l) => l.title)).toEqual([
      "To do",
      "Doing",
      "Done",
      "Someday",
    ]);
    expect(upgraded.upgradePending).toBe(false);
    await upgraded.close();
  });
});
