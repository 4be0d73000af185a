import { runOnView, type Draft } from "@statesync/core";
import fc from "fast-check";
import { applyPatches, current as immerCurrent, freeze, produce, type Patch } from "immer";
import { describe, expect, it } from "vitest";
import { boardModel, type Board } from "../src/board-model.js";

/*
 * The board's commands read what they act on with `current(draft)` and write by index. They must
 * do exactly what the commands that scanned through the draft did (copied below as the
 * reference): the same states and the same errors, for any sequence of commands, each in a draft
 * of its own or many in one draft, with patches applied to that draft in between, as a replica's
 * catch-up does (`applyBatch`: update entries' patches and commands in one draft). A command
 * after a patch must see what the patch did: reading the draft's base (Immer's `original`) would
 * not, and the first test below would fail.
 */

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

function insertionIndex(items: ReadonlyArray<{ id: string }>, beforeId: string | null): number {
  const index = beforeId === null ? -1 : items.findIndex((i) => i.id === beforeId);
  return index < 0 ? items.length : index;
}

/** The commands as they were before `current` (the reference). */
const reference: Record<string, (draft: Draft<Board>, args: any) => void> = {
  addList(draft, args) {
    assertNewId(draft, args.id);
    draft.lists.push({ id: args.id, title: args.title, cards: [] });
  },
  renameList(draft, args) {
    listOf(draft, args.listId).title = args.title;
  },
  moveList(draft, args) {
    const list = listOf(draft, args.listId);
    draft.lists.splice(draft.lists.indexOf(list), 1);
    draft.lists.splice(insertionIndex(draft.lists, args.beforeListId), 0, list);
  },
  deleteList(draft, args) {
    draft.lists.splice(draft.lists.indexOf(listOf(draft, args.listId)), 1);
  },
  addCard(draft, args) {
    assertNewId(draft, args.id);
    listOf(draft, args.listId).cards.push({ id: args.id, title: args.title });
  },
  renameCard(draft, args) {
    const { list, index } = cardOf(draft, args.cardId);
    list.cards[index]!.title = args.title;
  },
  moveCard(draft, args) {
    const target = listOf(draft, args.toListId);
    const { list, index } = cardOf(draft, args.cardId);
    const [card] = list.cards.splice(index, 1);
    target.cards.splice(insertionIndex(target.cards, args.beforeCardId), 0, card!);
  },
  deleteCard(draft, args) {
    const { list, index } = cardOf(draft, args.cardId);
    list.cards.splice(index, 1);
  },
};

type Commands = Record<string, (draft: Draft<Board>, args: any) => void>;
/** The board's commands as they are (with `current`). */
const withCurrent: Commands = Object.fromEntries(
  Object.entries(boardModel.commands).map(([name, c]) => [
    name,
    (draft: Draft<Board>, args: unknown) => c.apply(draft as never, args as never, {} as never),
  ]),
);

/** A patch, chosen against the state it is applied to (an update entry's, as any writer's). */
type PatchStep =
  | { kind: "patch"; op: "addCard"; list: number; id: string }
  | { kind: "patch"; op: "addList"; id: string }
  | { kind: "patch"; op: "removeCard"; list: number; card: number }
  | { kind: "patch"; op: "setCardId"; list: number; card: number; id: string };
type CommandStep = { kind: "command"; name: string; args: Record<string, unknown> };
type Step = PatchStep | CommandStep;

function patchOf(state: Board, step: PatchStep): Patch | undefined {
  if (step.op === "addList") {
    return {
      op: "add",
      path: ["lists", state.lists.length],
      value: { id: step.id, title: "L", cards: [] },
    };
  }
  if (state.lists.length === 0) return undefined;
  const list = step.list % state.lists.length;
  const cards = state.lists[list]!.cards;
  if (step.op === "addCard") {
    return {
      op: "add",
      path: ["lists", list, "cards", cards.length],
      value: { id: step.id, title: "P" },
    };
  }
  if (cards.length === 0) return undefined;
  const card = step.card % cards.length;
  if (step.op === "removeCard") return { op: "remove", path: ["lists", list, "cards", card] };
  return { op: "replace", path: ["lists", list, "cards", card, "id"], value: step.id };
}

/** What a step did: "ok", or the message it threw. */
type Outcome = string;

function step(draft: Draft<Board>, s: Step, commands: Commands, view: boolean): Outcome {
  if (s.kind === "patch") {
    // The patch is chosen on the state as the draft holds it now.
    const patch = patchOf(immerCurrent(draft) as Board, s);
    if (patch) applyPatches(draft, [patch]);
    return "patched";
  }
  try {
    const apply = commands[s.name]!;
    // The engine hands a command a recorder's view of the draft (`runOnView`, `applyBatch`).
    if (view) runOnView(draft, (v) => apply(v as Draft<Board>, s.args));
    else apply(draft, s.args);
    return "ok";
  } catch (e) {
    return (e as Error).message;
  }
}

/** Each step in a draft of its own (a step that threw leaves the state as it was). */
function oneByOne(state: Board, steps: readonly Step[], commands: Commands) {
  const outcomes: Outcome[] = [];
  let next = state;
  for (const s of steps) {
    next = produce(next, (draft) => void outcomes.push(step(draft, s, commands, true)));
  }
  return { state: next, outcomes };
}

/** Every step in one draft (each command throws before it writes: the draft goes on). */
function inOneDraft(state: Board, steps: readonly Step[], commands: Commands, view: boolean) {
  const outcomes: Outcome[] = [];
  const next = produce(state, (draft) => {
    for (const s of steps) outcomes.push(step(draft, s, commands, view));
  });
  return { state: next, outcomes };
}

const ids = fc.constantFrom("todo", "doing", "a", "b", "c", "d");
const before = fc.option(ids, { nil: null });
const title = fc.constantFrom("T", "U");
const command: fc.Arbitrary<CommandStep> = fc
  .oneof(
    fc.record({ id: ids, title }).map((args) => ({ name: "addList", args })),
    fc.record({ listId: ids, title }).map((args) => ({ name: "renameList", args })),
    fc.record({ listId: ids, beforeListId: before }).map((args) => ({ name: "moveList", args })),
    fc.record({ listId: ids }).map((args) => ({ name: "deleteList", args })),
    fc.record({ id: ids, listId: ids, title }).map((args) => ({ name: "addCard", args })),
    fc.record({ cardId: ids, title }).map((args) => ({ name: "renameCard", args })),
    fc
      .record({ cardId: ids, toListId: ids, beforeCardId: before })
      .map((args) => ({ name: "moveCard", args })),
    fc.record({ cardId: ids }).map((args) => ({ name: "deleteCard", args })),
  )
  .map((c) => ({ kind: "command" as const, ...c }));
const small = fc.nat({ max: 5 });
const patch: fc.Arbitrary<PatchStep> = fc.oneof(
  fc
    .record({ list: small, id: ids })
    .map((p) => ({ kind: "patch" as const, op: "addCard" as const, ...p })),
  ids.map((id) => ({ kind: "patch" as const, op: "addList" as const, id })),
  fc
    .record({ list: small, card: small })
    .map((p) => ({ kind: "patch" as const, op: "removeCard" as const, ...p })),
  fc
    .record({ list: small, card: small, id: ids })
    .map((p) => ({ kind: "patch" as const, op: "setCardId" as const, ...p })),
);
/** Boards with duplicate ids too (nothing but the commands keeps ids unique). */
const board: fc.Arbitrary<Board> = fc
  .array(
    fc.record({
      id: ids,
      title,
      cards: fc.array(fc.record({ id: ids, title }), { maxLength: 4 }),
    }),
    { maxLength: 4 },
  )
  .map((lists) => freeze({ lists }, true));
const steps = fc.array(
  fc.oneof({ weight: 3, arbitrary: command }, { weight: 1, arbitrary: patch }),
  {
    maxLength: 25,
  },
);

describe("board commands through current(draft)", () => {
  it("see what a patch applied to the same draft added: a card's id is taken", () => {
    const state = freeze(boardModel.initial, true) as Board;
    for (const view of [false, true]) {
      const { outcomes, state: after } = inOneDraft(
        state,
        [
          { kind: "patch", op: "addCard", list: 0, id: "c" },
          { kind: "command", name: "addCard", args: { id: "c", listId: "doing", title: "C" } },
          { kind: "command", name: "renameCard", args: { cardId: "c", title: "D" } },
        ],
        withCurrent,
        view,
      );
      expect(outcomes).toEqual(["patched", "id c is taken", "ok"]);
      expect(after.lists[0]!.cards).toEqual([{ id: "c", title: "D" }]);
    }
  });

  it("give the states and errors of the commands that scanned the draft, for any steps", () => {
    fc.assert(
      fc.property(board, steps, (state, s) => {
        expect(oneByOne(state, s, withCurrent)).toEqual(oneByOne(state, s, reference));
        for (const view of [false, true]) {
          expect(inOneDraft(state, s, withCurrent, view)).toEqual(
            inOneDraft(state, s, reference, view),
          );
        }
      }),
      { numRuns: 1000 },
    );
  });
});
