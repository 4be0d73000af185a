import { createSynchronizer, isStateSyncError, MemoryLog, type Immutable } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { boardProblem } from "../src/board-check.js";
import { boardLists, boardModel, type Board } from "../src/board-model.js";

/** Two replicas of one board on one in-memory log. */
async function twoReplicas() {
  const log = new MemoryLog();
  const open = (clientId: string) =>
    createSynchronizer({ log: log.handle(), model: boardModel, clientId, compaction: false });
  const [a, b] = [await open("a"), await open("b")];
  await a.update("addCard", { id: "x", listId: "todo", title: "X" });
  await a.update("addCard", { id: "y", listId: "todo", title: "Y" });
  await b.synced();
  return { a, b, close: () => Promise.all([a.close(), b.close()]) };
}

/** The card ids of each list, `{ listId: [cardIds] }` (and the board's index checked). */
function where(state: Immutable<Board>): Record<string, string[]> {
  expect(boardProblem(state)).toBeUndefined();
  return Object.fromEntries(boardLists(state).map((l) => [l.id, l.cards.map((c) => c.id)]));
}

describe("board model", () => {
  it("resolves two concurrent moves of one card: the later one wins on every replica", async () => {
    const { a, b, close } = await twoReplicas();
    const [ra, rb] = await Promise.all([
      a.update("moveCard", { cardId: "x", toListId: "doing", beforeCardId: null }),
      b.update("moveCard", { cardId: "x", toListId: "done", beforeCardId: null }),
    ]);
    const last = Math.max(ra.revision, rb.revision);
    await Promise.all([a.waitFor(last), b.waitFor(last)]);
    expect(where(a.state)).toEqual(where(b.state));
    expect(where(a.state)[ra.revision > rb.revision ? "doing" : "done"]).toEqual(["x"]);
    expect(Object.keys(a.state.cards)).toHaveLength(2);
    await close();
  });

  it("inserts before a card, or at the end when that card moved away meanwhile", async () => {
    const { a, b, close } = await twoReplicas();
    await a.update("moveCard", { cardId: "y", toListId: "todo", beforeCardId: "x" });
    expect(where(a.state).todo).toEqual(["y", "x"]);
    await b.update("moveCard", { cardId: "x", toListId: "done", beforeCardId: null });
    await a.update("moveCard", { cardId: "y", toListId: "done", beforeCardId: "gone" });
    expect(where(a.state).done).toEqual(["x", "y"]);
    await close();
  });

  it("refuses a move into a list deleted meanwhile, and leaves the card where it was", async () => {
    const { a, b, close } = await twoReplicas();
    await b.update("deleteList", { listId: "done" });
    await expect(
      a.update("moveCard", { cardId: "x", toListId: "done", beforeCardId: null }),
    ).rejects.toThrow(/list no longer exists/);
    expect(where(a.state).todo).toEqual(["x", "y"]);
    await close();
  });

  it("validates arguments with zod before anything is sent", async () => {
    const { a, close } = await twoReplicas();
    const error = await a
      .update("addCard", { id: "", listId: "todo", title: "  " })
      .catch((e) => e);
    expect(isStateSyncError(error, "VALIDATION")).toBe(true);
    await expect(a.update("addCard", { id: "x", listId: "todo", title: "again" })).rejects.toThrow(
      /taken/,
    );
    // A fresh-eyes trial (stop 26): 150 emoji (300 UTF-16 units, which the inputs' maxLength
    // counts) passed zod's max of 200 code points, and a zero-width space made an invisible card.
    for (const title of ["😀".repeat(150), "\u200B", " \u200B\u200D "]) {
      await expect(a.update("addCard", { id: "e1", listId: "todo", title })).rejects.toMatchObject({
        code: "VALIDATION",
      });
    }
    await a.update("addCard", { id: "e1", listId: "todo", title: "😀".repeat(100) });
    // Ids are keys of the board's records (version 2): never one of Object.prototype's.
    for (const id of ["__proto__", "constructor", "prototype"]) {
      await expect(a.update("addList", { id, title: "L" })).rejects.toMatchObject({
        code: "VALIDATION",
      });
    }
    await expect(a.update("renameCard", { cardId: "toString", title: "T" })).rejects.toThrow(
      /card no longer exists/,
    );
    await close();
  });

  it("renames, reorders and deletes lists and cards", async () => {
    const { a, close } = await twoReplicas();
    await a.update("addList", { id: "later", title: "Later" });
    await a.update("moveList", { listId: "later", beforeListId: "todo" });
    await a.update("renameList", { listId: "later", title: "Someday" });
    await a.update("renameCard", { cardId: "x", title: "X!" });
    await a.update("deleteCard", { cardId: "y" });
    expect(boardLists(a.state).map((l) => l.title)).toEqual(["Someday", "To do", "Doing", "Done"]);
    expect(boardLists(a.state)[1]?.cards).toEqual([{ id: "x", title: "X!" }]);
    expect(where(a.state)).toEqual({ later: [], todo: ["x"], doing: [], done: [] });
    await close();
  });
});
