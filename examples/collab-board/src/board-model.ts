import { current, defineModel, type Draft, type Immutable } from "@statesync/core";
import { z } from "zod";
import { idSchema, newTitleSchema, RESERVED_IDS, titleSchema } from "./board-fields.js";
import { migrateBoardV1 } from "./board-migrate.js";
import { boardModelV1 } from "./board-model-v1.js";

export { RESERVED_IDS, TITLE_MAX } from "./board-fields.js";

const id = idSchema;
/** An id as a key of `lists` or `cards` (and a new list's or card's id). */
const key = idSchema.refine(
  (s) => !RESERVED_IDS.has(s),
  "must not be __proto__, constructor or prototype",
);

/**
 * The board, version 2: the lists in order (`listIds`), each list by id with its cards in order
 * (`cardIds`), each card by id with the list it is in (`listId`, the index that finds a card's
 * list without a scan). Version 1 held the cards inside the lists, and each command searched
 * them all: see `board-model-v1.ts`. The commands keep the three parts consistent (every list of
 * `listIds` once in `lists` and back, every card in the `cardIds` of its `listId` and nowhere
 * else); `boardProblem` (board-check.ts) checks that, and the tests run it after every command.
 * The schema checks what it can per key (ids, titles): a refinement over the whole board would
 * make the engine parse all of it after every update (it checks only what an update wrote
 * where the containers on the way have no refinement), the cost per edit this version removes.
 */
export const boardSchema = z.object({
  listIds: z.array(key),
  lists: z.record(key, z.object({ title: titleSchema, cardIds: z.array(key) })),
  cards: z.record(key, z.object({ title: titleSchema, listId: key })),
});

/** The shared state (mutable form, as recipes see it through a draft). */
export type Board = z.infer<typeof boardSchema>;
/** A list as components read it (replica states are deeply frozen). */
export type List = Immutable<Board["lists"][string]>;
/** A card as components read it. */
export type Card = Immutable<Board["cards"][string]>;

/*
 * Every command reads and writes only what it acts on, through the draft: a list or card by its
 * key, the `cardIds` of the lists it changes (found with `current`, plain data: no proxy per id),
 * `listIds` for the commands that change the lists. None reads the rest of the board, so a
 * command costs the same on a board of ten cards and one of 20,000, and the view of n queued
 * commands costs O(n) (test/board-cost.test.ts counts the reads).
 */

type BoardDraft = Draft<Board>;

/** `record[k]` when `record` holds `k` as its own key (never a member of Object.prototype). */
function own<T extends object>(record: Record<string, T>, k: string): T | undefined {
  if (RESERVED_IDS.has(k)) return undefined;
  const value: unknown = record[k];
  return typeof value === "object" && value !== null ? (value as T) : undefined;
}

function listOf(draft: BoardDraft, listId: string): BoardDraft["lists"][string] {
  const list = own(draft.lists, listId);
  if (!list) throw new Error(`the list no longer exists`);
  return list;
}

function cardOf(draft: BoardDraft, cardId: string): BoardDraft["cards"][string] {
  const card = own(draft.cards, cardId);
  if (!card) throw new Error(`the card no longer exists`);
  return card;
}

/** The `cardIds` of the list card `cardId` is in (its `listId`). */
function cardIdsOf(draft: BoardDraft, cardId: string, listId: string): string[] {
  const list = own(draft.lists, listId);
  if (!list) throw new Error(`the board's index is damaged: card ${cardId} is in no list`);
  return list.cardIds;
}

/** Throws when a list or a card already has the id `newId`. */
function assertNewId(draft: BoardDraft, newId: string): void {
  if (own(draft.lists, newId) || own(draft.cards, newId)) throw new Error(`id ${newId} is taken`);
}

/** Takes `item` out of `items`, an array of the draft. */
function remove(items: string[], item: string): void {
  const index = current(items).indexOf(item);
  if (index < 0) throw new Error(`the board's index is damaged: ${item} is not where it is filed`);
  items.splice(index, 1);
}

/** Puts `item` into `items` before `beforeId`, or at the end when that is null or not there. */
function insert(items: string[], item: string, beforeId: string | null): void {
  const index = beforeId === null ? -1 : current(items).indexOf(beforeId);
  if (index < 0) items.push(item);
  else items.splice(index, 0, item);
}

const commands = {
  addList: {
    args: z.object({ id: key, title: newTitleSchema }),
    apply(draft: BoardDraft, args: { id: string; title: string }) {
      assertNewId(draft, args.id);
      draft.lists[args.id] = { title: args.title, cardIds: [] };
      draft.listIds.push(args.id);
    },
  },
  renameList: {
    args: z.object({ listId: id, title: newTitleSchema }),
    apply(draft: BoardDraft, args: { listId: string; title: string }) {
      listOf(draft, args.listId).title = args.title;
    },
  },
  moveList: {
    args: z.object({ listId: id, beforeListId: id.nullable() }),
    apply(draft: BoardDraft, args: { listId: string; beforeListId: string | null }) {
      listOf(draft, args.listId);
      remove(draft.listIds, args.listId);
      insert(draft.listIds, args.listId, args.beforeListId);
    },
  },
  deleteList: {
    args: z.object({ listId: id }),
    apply(draft: BoardDraft, args: { listId: string }) {
      const list = listOf(draft, args.listId);
      for (const cardId of current(list.cardIds)) delete draft.cards[cardId];
      delete draft.lists[args.listId];
      remove(draft.listIds, args.listId);
    },
  },
  addCard: {
    args: z.object({ id: key, listId: id, title: newTitleSchema }),
    apply(draft: BoardDraft, args: { id: string; listId: string; title: string }) {
      assertNewId(draft, args.id);
      listOf(draft, args.listId).cardIds.push(args.id);
      draft.cards[args.id] = { title: args.title, listId: args.listId };
    },
  },
  renameCard: {
    args: z.object({ cardId: id, title: newTitleSchema }),
    apply(draft: BoardDraft, args: { cardId: string; title: string }) {
      // A new card object (two strings) rather than a write into it: a card an earlier queued
      // command added is frozen in the view's shared draft, and a write there would make the
      // engine run this command in a draft of its own.
      const { listId } = cardOf(draft, args.cardId);
      draft.cards[args.cardId] = { title: args.title, listId };
    },
  },
  moveCard: {
    args: z.object({ cardId: id, toListId: id, beforeCardId: id.nullable() }),
    apply(
      draft: BoardDraft,
      args: { cardId: string; toListId: string; beforeCardId: string | null },
    ) {
      const to = listOf(draft, args.toListId);
      const { title, listId } = cardOf(draft, args.cardId);
      remove(cardIdsOf(draft, args.cardId, listId), args.cardId);
      insert(to.cardIds, args.cardId, args.beforeCardId);
      if (listId !== args.toListId) draft.cards[args.cardId] = { title, listId: args.toListId };
    },
  },
  deleteCard: {
    args: z.object({ cardId: id }),
    apply(draft: BoardDraft, args: { cardId: string }) {
      const { listId } = cardOf(draft, args.cardId);
      remove(cardIdsOf(draft, args.cardId, listId), args.cardId);
      delete draft.cards[args.cardId];
    },
  },
};

/**
 * The collaborative board (version 2). Every edit is a command with zod-validated arguments.
 * Positions are relative ("before card X", null for the end), so when two people move cards at
 * once the losing conditional update runs again on the winner's state and still does what its
 * author meant; a move whose target was deleted meanwhile fails with a message instead.
 *
 * Version 1 (`board-model-v1.ts`) is its predecessor: a log, snapshot or offline queue of version
 * 1 opens, migrated (`migrateBoardV1`); the log switches to version 2 once, when the first
 * replica of this version reaches it. Version 1's commands are this version's, with the same
 * names, arguments and outcomes: a queued or late version-1 command is applied as one of this
 * version (`upgradeCommand`).
 */
export const boardModel = defineModel({
  name: "collab-board",
  version: 2,
  state: boardSchema,
  initial: migrateBoardV1(boardModelV1.initial),
  commands,
  predecessor: boardModelV1,
  migrate: migrateBoardV1,
  upgradeCommand: (command) => (Object.hasOwn(commands, command.name) ? command : undefined),
});

/** A list with its cards, as version 1 held them (what {@link boardLists} gives). */
export interface ListWithCards {
  readonly id: string;
  readonly title: string;
  readonly cards: ReadonlyArray<{ readonly id: string; readonly title: string }>;
}

/**
 * The lists of `board` in order, each with its cards in order (new objects, O(board)): for tests
 * and tools that read the whole board; the app reads the parts it shows.
 */
export function boardLists(board: Immutable<Board>): ListWithCards[] {
  return board.listIds.map((listId) => {
    const list = board.lists[listId]!;
    const cards = list.cardIds.map((cardId) => ({ id: cardId, title: board.cards[cardId]!.title }));
    return { id: listId, title: list.title, cards };
  });
}

/** A fresh id for a list or card (random, 12 hex digits; works on plain http too). */
export function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
