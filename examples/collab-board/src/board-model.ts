import { defineModel, type Draft, type Immutable } from "@statesync/core";
import { z } from "zod";

const id = z.string().min(1).max(64);
/** The longest title, in characters (the inputs stop there). */
export const TITLE_MAX = 200;
const title = z.string().trim().min(1).max(TITLE_MAX);
/**
 * A title a command sets: at most {@link TITLE_MAX} UTF-16 units, as the inputs' `maxLength`
 * counts (zod's `max` counts code points: 150 emoji passed), with a visible character (a title
 * of a zero-width space made a card that could not be seen or double-clicked: a fresh-eyes
 * trial, stop 26). Stored titles are read as before.
 */
const newTitle = title
  .refine((s) => s.length <= TITLE_MAX, `must be at most ${TITLE_MAX} characters`)
  .refine((s) => /[^\s\p{Cf}]/u.test(s), "must have a visible character");

const cardSchema = z.object({ id, title });
const listSchema = z.object({ id, title, cards: z.array(cardSchema) });
/** The board: lists in order, each with its cards in order. */
export const boardSchema = z.object({ lists: z.array(listSchema) });

/** The shared state (mutable form, as recipes see it through a draft). */
export type Board = z.infer<typeof boardSchema>;
/** A list as components read it (replica states are deeply frozen). */
export type List = Immutable<Board["lists"][number]>;
/** A card as components read it. */
export type Card = List["cards"][number];

type DraftList = Draft<Board>["lists"][number];

function listOf(draft: Draft<Board>, listId: string): DraftList {
  const list = draft.lists.find((l) => l.id === listId);
  if (!list) throw new Error(`the list no longer exists`);
  return list;
}

function cardOf(draft: Draft<Board>, cardId: string): { list: DraftList; index: number } {
  for (const list of draft.lists) {
    const index = list.cards.findIndex((c) => c.id === cardId);
    if (index >= 0) return { list, index };
  }
  throw new Error(`the card no longer exists`);
}

function assertNewId(draft: Draft<Board>, newId: string): void {
  const taken =
    draft.lists.some((l) => l.id === newId) ||
    draft.lists.some((l) => l.cards.some((c) => c.id === newId));
  if (taken) throw new Error(`id ${newId} is taken`);
}

/** Index of `beforeId` in `items`, or the end when it is null or gone (moved or deleted). */
function insertionIndex(items: ReadonlyArray<{ id: string }>, beforeId: string | null): number {
  const index = beforeId === null ? -1 : items.findIndex((i) => i.id === beforeId);
  return index < 0 ? items.length : index;
}

/**
 * The collaborative board. Every edit is a command with zod-validated arguments. Positions are
 * relative ("before card X", null for the end), so when two people move cards at once the
 * losing conditional update runs again on the winner's state and still does what its author
 * meant; a move whose target was deleted meanwhile fails with a message instead.
 */
export const boardModel = defineModel({
  name: "collab-board",
  version: 1,
  state: boardSchema,
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
        assertNewId(draft, args.id);
        draft.lists.push({ id: args.id, title: args.title, cards: [] });
      },
    },
    renameList: {
      args: z.object({ listId: id, title: newTitle }),
      apply(draft, args) {
        listOf(draft, args.listId).title = args.title;
      },
    },
    moveList: {
      args: z.object({ listId: id, beforeListId: id.nullable() }),
      apply(draft, args) {
        const list = listOf(draft, args.listId);
        draft.lists.splice(draft.lists.indexOf(list), 1);
        draft.lists.splice(insertionIndex(draft.lists, args.beforeListId), 0, list);
      },
    },
    deleteList: {
      args: z.object({ listId: id }),
      apply(draft, args) {
        draft.lists.splice(draft.lists.indexOf(listOf(draft, args.listId)), 1);
      },
    },
    addCard: {
      args: z.object({ id, listId: id, title: newTitle }),
      apply(draft, args) {
        assertNewId(draft, args.id);
        listOf(draft, args.listId).cards.push({ id: args.id, title: args.title });
      },
    },
    renameCard: {
      args: z.object({ cardId: id, title: newTitle }),
      apply(draft, args) {
        const { list, index } = cardOf(draft, args.cardId);
        list.cards[index]!.title = args.title;
      },
    },
    moveCard: {
      args: z.object({ cardId: id, toListId: id, beforeCardId: id.nullable() }),
      apply(draft, args) {
        const target = listOf(draft, args.toListId);
        const { list, index } = cardOf(draft, args.cardId);
        const [card] = list.cards.splice(index, 1);
        target.cards.splice(insertionIndex(target.cards, args.beforeCardId), 0, card!);
      },
    },
    deleteCard: {
      args: z.object({ cardId: id }),
      apply(draft, args) {
        const { list, index } = cardOf(draft, args.cardId);
        list.cards.splice(index, 1);
      },
    },
  },
});

/** A fresh id for a list or card (random, 12 hex digits; works on plain http too). */
export function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
