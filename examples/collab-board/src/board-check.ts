import type { Immutable } from "@statesync/core";
import type { Board } from "./board-model.js";

/**
 * What is wrong with the index of `board`, or undefined when nothing is: every list of `listIds`
 * is there once and is in `lists`, and every list of `lists` in `listIds`; every card of a list's
 * `cardIds` is there once, in no other list, is in `cards` and names that list as its `listId`;
 * every card of `cards` is in a list. The board's commands keep this (the tests run it after each
 * one); it reads the whole board, which is why the schema does not run it on every update (see
 * `boardSchema`).
 */
export function boardProblem(board: Immutable<Board>): string | undefined {
  const listed = new Set<string>();
  for (const listId of board.listIds) {
    if (listed.has(listId)) return `list ${listId} is in listIds twice`;
    if (!Object.hasOwn(board.lists, listId)) return `list ${listId} of listIds is not in lists`;
    listed.add(listId);
  }
  for (const listId of Object.keys(board.lists)) {
    if (!listed.has(listId)) return `list ${listId} is not in listIds`;
  }
  const filed = new Set<string>();
  for (const listId of board.listIds) {
    for (const cardId of board.lists[listId]!.cardIds) {
      if (filed.has(cardId)) return `card ${cardId} is listed twice`;
      filed.add(cardId);
      if (!Object.hasOwn(board.cards, cardId)) return `card ${cardId} of ${listId} is not in cards`;
      const filedUnder = board.cards[cardId]!.listId;
      if (filedUnder !== listId) return `card ${cardId} is in ${listId}, its listId ${filedUnder}`;
    }
  }
  for (const cardId of Object.keys(board.cards)) {
    if (!filed.has(cardId)) return `card ${cardId} is in no list`;
  }
  return undefined;
}
