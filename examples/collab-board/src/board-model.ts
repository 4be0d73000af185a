import { current, defineModel, type Immutable } from "@statesync/core";
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

type Lists = Immutable<Board["lists"]>;

/*
 * The commands find what they act on in `current(draft).lists`, plain data, and then write
 * through the draft by index: a scan through the draft made a proxy of every card it read, in
 * every command, and the view of 2,000 queued addCards took 5 s to compute after a reload (0.8 s
 * now). `current` reflects every write before it (an earlier command or patches in the same
 * draft), so the scans see what the draft holds; a copy of the draft's base (Immer's `original`)
 * would miss what those wrote.
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

/** A fresh id for a list or card (random, 12 hex digits; works on plain http too). */
export function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
