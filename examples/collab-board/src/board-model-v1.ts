import { current, defineModel, type Immutable } from "@statesync/core";
import { z } from "zod";
import { idSchema, newTitleSchema, titleSchema } from "./board-fields.js";

const id = idSchema;
const title = titleSchema;
const newTitle = newTitleSchema;

const cardSchema = z.object({ id, title });
const listSchema = z.object({ id, title, cards: z.array(cardSchema) });
/** Version 1's board: lists in order, each with its cards in order. */
export const boardSchemaV1 = z.object({ lists: z.array(listSchema) });

/** Version 1's state (mutable form, as recipes see it through a draft). */
export type BoardV1 = z.infer<typeof boardSchemaV1>;

type Lists = Immutable<BoardV1["lists"]>;

/*
 * The commands find what they act on in `current(draft).lists`, plain data, and then write
 * through the draft by index: a scan through the draft made a proxy of every card it read, in
 * every command, and the view of 2,000 queued addCards took 5 s to compute after a reload (0.8 s
 * with `current`; 20,000 took 75 s, as each command still copied and scanned every card: version
 * 2 keeps the cards by id instead). `current` reflects every write before it (an earlier command
 * or patches in the same draft), so the scans see what the draft holds; a copy of the draft's
 * base (Immer's `original`) would miss what those wrote.
 */

/** The index of list `listId` in `lists`; throws when it is gone. */
function listIndex(lists: Lists, listId: string): number {
  const index = lists.findIndex((l) => l.id === listId);
  if (index < 0) throw new Error(`the list no longer exists`);
  return index;
}

/** Where card `cardId` is in `lists` (its list's index, its own); throws when it is gone. */
function cardIndex(lists: Lists, cardId: string): { list: number; card: number } {
  for (let list = 0; list < lists.length; list++) {
    const card = lists[list]!.cards.findIndex((c) => c.id === cardId);
    if (card >= 0) return { list, card };
  }
  throw new Error(`the card no longer exists`);
}

/** Throws when a list or a card of `lists` already has the id `newId`. */
function assertNewId(lists: Lists, newId: string): void {
  const taken =
    lists.some((l) => l.id === newId) || lists.some((l) => l.cards.some((c) => c.id === newId));
  if (taken) throw new Error(`id ${newId} is taken`);
}

/**
 * Where an item goes in `items` (as they were read): before `beforeId`, or at the end when that
 * is null or gone. `removed`: the index of an item taken out of `items` meanwhile (the item
 * moved), which is not looked at and shifts the ones after it.
 */
function insertionIndex(
  items: ReadonlyArray<{ id: string }>,
  beforeId: string | null,
  removed = -1,
): number {
  const index =
    beforeId === null ? -1 : items.findIndex((item, k) => k !== removed && item.id === beforeId);
  if (index < 0) return removed < 0 ? items.length : items.length - 1;
  return removed >= 0 && index > removed ? index - 1 : index;
}

/**
 * The collaborative board, version 1 (frozen: it replays the entries of logs written before the
 * switch to version 2, so what its commands compute must never change; `board-model.ts` has the
 * board as the app runs it). Every edit is a command with zod-validated arguments. Positions are
 * relative ("before card X", null for the end), so when two people move cards at once the
 * losing conditional update runs again on the winner's state and still does what its author
 * meant; a move whose target was deleted meanwhile fails with a message instead.
 */
export const boardModelV1 = defineModel({
  name: "collab-board",
  version: 1,
  state: boardSchemaV1,
  initial: {
    lists: [
      { id: "todo", title: "To do", cards: [] },
      { id: "doing", title: "Doing", cards: [] },
      { id: "done", title: "Done", cards: [] },
    ],
  },
  commands: {
    addList: {
      args: z.object({ id, title: newTitle }),
      apply(draft, args) {
        assertNewId(current(draft).lists, args.id);
        draft.lists.push({ id: args.id, title: args.title, cards: [] });
      },
    },
    renameList: {
      args: z.object({ listId: id, title: newTitle }),
      apply(draft, args) {
        draft.lists[listIndex(current(draft).lists, args.listId)]!.title = args.title;
      },
    },
    moveList: {
      args: z.object({ listId: id, beforeListId: id.nullable() }),
      apply(draft, args) {
        const lists = current(draft).lists;
        const from = listIndex(lists, args.listId);
        const [list] = draft.lists.splice(from, 1);
        draft.lists.splice(insertionIndex(lists, args.beforeListId, from), 0, list!);
      },
    },
    deleteList: {
      args: z.object({ listId: id }),
      apply(draft, args) {
        draft.lists.splice(listIndex(current(draft).lists, args.listId), 1);
      },
    },
    addCard: {
      args: z.object({ id, listId: id, title: newTitle }),
      apply(draft, args) {
        const lists = current(draft).lists;
        assertNewId(lists, args.id);
        draft.lists[listIndex(lists, args.listId)]!.cards.push({ id: args.id, title: args.title });
      },
    },
    renameCard: {
      args: z.object({ cardId: id, title: newTitle }),
      apply(draft, args) {
        const at = cardIndex(current(draft).lists, args.cardId);
        draft.lists[at.list]!.cards[at.card]!.title = args.title;
      },
    },
    moveCard: {
      args: z.object({ cardId: id, toListId: id, beforeCardId: id.nullable() }),
      apply(draft, args) {
        const lists = current(draft).lists;
        const to = listIndex(lists, args.toListId);
        const at = cardIndex(lists, args.cardId);
        const [card] = draft.lists[at.list]!.cards.splice(at.card, 1);
        const index = insertionIndex(
          lists[to]!.cards,
          args.beforeCardId,
          at.list === to ? at.card : -1,
        );
        draft.lists[to]!.cards.splice(index, 0, card!);
      },
    },
    deleteCard: {
      args: z.object({ cardId: id }),
      apply(draft, args) {
        const at = cardIndex(current(draft).lists, args.cardId);
        draft.lists[at.list]!.cards.splice(at.card, 1);
      },
    },
  },
});
