import type { Immutable } from "@statesync/core";
import { RESERVED_IDS } from "./board-fields.js";
import type { Board } from "./board-model.js";
import type { BoardV1 } from "./board-model-v1.js";

/**
 * Version 1's board as version 2 holds it: the same lists and cards in the same order, each
 * filed by id. Deterministic and O(board) (every replica that reads a version-1 log runs it, or
 * trusts the switch entry that carries its result).
 *
 * Version 1 did not need unique ids: its commands kept them unique, but a plain update (patches)
 * could add a list or a card whose id another list or card of its kind had. Its commands act on
 * the first one in board order, so that one keeps the id; a later one, and a list or card whose
 * id cannot be a key ({@link RESERVED_IDS}), gets a fresh id `renamed-<n>` (the lowest n no list
 * or card of the board has), and keeps its title and place.
 */
export function migrateBoardV1(previous: Immutable<BoardV1>): Board {
  const taken = new Set<string>();
  for (const list of previous.lists) {
    taken.add(list.id);
    for (const card of list.cards) taken.add(card.id);
  }
  let n = 0;
  const fresh = (): string => {
    let id: string;
    do id = `renamed-${++n}`;
    while (taken.has(id));
    taken.add(id);
    return id;
  };
  const usable = (id: string, filed: object) => !RESERVED_IDS.has(id) && !Object.hasOwn(filed, id);
  const board: Board = { listIds: [], lists: {}, cards: {} };
  for (const list of previous.lists) {
    const listId = usable(list.id, board.lists) ? list.id : fresh();
    const cardIds: string[] = [];
    for (const card of list.cards) {
      const cardId = usable(card.id, board.cards) ? card.id : fresh();
      cardIds.push(cardId);
      board.cards[cardId] = { title: card.title, listId };
    }
    board.lists[listId] = { title: list.title, cardIds };
    board.listIds.push(listId);
  }
  return board;
}
