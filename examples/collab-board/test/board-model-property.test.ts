import { runOnView, runQueued, type Draft } from "@statesync/core";
import fc from "fast-check";
import { applyPatches, current as immerCurrent, freeze, produce, type Patch } from "immer";
import { describe, expect, it } from "vitest";
import { boardProblem } from "../src/board-check.js";
import { migrateBoardV1 } from "../src/board-migrate.js";
import { boardModelV1, type BoardV1 } from "../src/board-model-v1.js";
import { boardModel, boardSchema, type Board } from "../src/board-model.js";

/*
 * Version 2 of the board keeps the cards by id, with an index of the list each is in; its
 * commands must do exactly what version 1's did (which scanned the lists): the same states (as
 * the migration gives them) and the same errors, for any board and any sequence of commands, and
 * keep the index consistent. And they must give the same state whether each runs in a draft of
 * its own, or many in one draft with patches applied to that draft in between (a replica's
 * catch-up, `applyBatch`), or in the view of queued updates (`runQueued`): a command after a
 * patch must see what the patch did.
 */

type Commands = Record<string, { apply(draft: unknown, args: unknown, ctx: never): void }>;
const v1 = boardModelV1.commands as unknown as Commands;
const v2 = boardModel.commands as unknown as Commands;

/** A patch, chosen against the state it is applied to (an update entry's, as any writer's). */
type PatchStep =
  | { kind: "patch"; op: "addCard"; list: number; id: string }
  | { kind: "patch"; op: "removeCard"; list: number; card: number };
type CommandStep = { kind: "command"; name: string; args: Record<string, unknown> };
type Step = PatchStep | CommandStep;

/** The patches of `step` on `state` (a card added or removed with its index entry). */
function patchesOf(state: Board, step: PatchStep): Patch[] {
  if (state.listIds.length === 0) return [];
  const listId = state.listIds[step.list % state.listIds.length]!;
  const cardIds = state.lists[listId]!.cardIds;
  if (step.op === "addCard") {
    if (Object.hasOwn(state.cards, step.id) || Object.hasOwn(state.lists, step.id)) return [];
    return [
      { op: "add", path: ["cards", step.id], value: { title: "P", listId } },
      { op: "add", path: ["lists", listId, "cardIds", cardIds.length], value: step.id },
    ];
  }
  if (cardIds.length === 0) return [];
  const card = step.card % cardIds.length;
  return [
    { op: "remove", path: ["lists", listId, "cardIds", card] },
    { op: "remove", path: ["cards", cardIds[card]!] },
  ];
}

/** What a step did: "ok", "patched", or the message it threw. */
type Outcome = string;

function step(draft: Draft<Board>, s: Step, commands: Commands, view: boolean): Outcome {
  if (s.kind === "patch") {
    // The patch is chosen on the state as the draft holds it now.
    applyPatches(draft, patchesOf(immerCurrent(draft) as Board, s));
    return "patched";
  }
  try {
    const apply = (d: unknown) => commands[s.name]!.apply(d, s.args, {} as never);
    // The engine hands a command a recorder's view of the draft (`runOnView`, `applyBatch`).
    if (view) runOnView(draft, apply);
    else apply(draft);
    return "ok";
  } catch (e) {
    return (e as Error).message;
  }
}

/** Each step in a draft of its own (a step that threw leaves the state as it was). */
function oneByOne<S>(state: S, steps: readonly Step[], commands: Commands) {
  const outcomes: Outcome[] = [];
  let next = state;
  for (const s of steps) {
    next = produce(next, (draft) => void outcomes.push(step(draft as never, s, commands, true)));
  }
  return { state: next, outcomes };
}

/** Every step in one draft (each command throws before it writes: the draft goes on). */
function inOneDraft(state: Board, steps: readonly Step[], view: boolean) {
  const outcomes: Outcome[] = [];
  const next = produce(state, (draft) => {
    for (const s of steps) outcomes.push(step(draft, s, v2, view));
  });
  return { state: next, outcomes };
}

/** The state after `steps` (commands only) in the view of queued updates. */
function queued(state: Board, steps: readonly CommandStep[]): Board {
  return runQueued(state, steps, (view, s) => v2[s.name]!.apply(view, s.args, {} as never));
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
  fc
    .record({ list: small, card: small })
    .map((p) => ({ kind: "patch" as const, op: "removeCard" as const, ...p })),
);
/**
 * Version-1 boards whose lists have distinct ids, and whose cards have (a list and a card may
 * share one): what version 1's commands make. Duplicates are the migration's (board-versions).
 */
const boardV1: fc.Arbitrary<BoardV1> = fc
  .uniqueArray(
    fc.record({
      id: ids,
      title,
      cards: fc.array(fc.record({ id: ids, title }), { maxLength: 4 }),
    }),
    { maxLength: 4, selector: (l) => l.id },
  )
  .map((lists) => {
    const seen = new Set<string>();
    const unique = (c: { id: string }) => !seen.has(c.id) && seen.add(c.id);
    return freeze({ lists: lists.map((l) => ({ ...l, cards: l.cards.filter(unique) })) }, true);
  });
const commands = fc.array(command, { maxLength: 25 });
const steps = fc.array(
  fc.oneof({ weight: 3, arbitrary: command }, { weight: 1, arbitrary: patch }),
  { maxLength: 25 },
);

/** `state` passes the schema and its index is consistent. */
function expectSound(state: Board): void {
  expect(boardProblem(state)).toBeUndefined();
  expect(boardSchema.safeParse(state).success).toBe(true);
}

describe("board commands, version 2", () => {
  it("see what a patch applied to the same draft added: a card's id is taken", () => {
    const state = freeze(boardModel.initial, true);
    for (const view of [false, true]) {
      const { outcomes, state: after } = inOneDraft(
        state,
        [
          { kind: "patch", op: "addCard", list: 0, id: "c" },
          { kind: "command", name: "addCard", args: { id: "c", listId: "doing", title: "C" } },
          { kind: "command", name: "renameCard", args: { cardId: "c", title: "D" } },
          { kind: "command", name: "addCard", args: { id: "e", listId: "todo", title: "E" } },
          {
            kind: "command",
            name: "moveCard",
            args: { cardId: "e", toListId: "todo", beforeCardId: "c" },
          },
        ],
        view,
      );
      expect(outcomes).toEqual(["patched", "id c is taken", "ok", "ok", "ok"]);
      expect(after.lists.todo!.cardIds).toEqual(["e", "c"]);
      expect(after.cards.c).toEqual({ title: "D", listId: "todo" });
      expectSound(after);
    }
  });

  it("do what version 1's commands did, on the migrated board, and keep the index", () => {
    fc.assert(
      fc.property(boardV1, commands, (state, s) => {
        const old = oneByOne(state, s, v1);
        const now = oneByOne(migrateBoardV1(state), s, v2);
        expect(now.outcomes).toEqual(old.outcomes);
        expect(now.state).toEqual(migrateBoardV1(old.state));
        expectSound(now.state);
      }),
      { numRuns: 1000 },
    );
  });

  it("give one state in a draft each, in one draft with patches between, and queued", () => {
    fc.assert(
      fc.property(boardV1, steps, (v1State, s) => {
        const state = freeze(migrateBoardV1(v1State), true);
        const each = oneByOne(state, s, v2);
        expectSound(each.state);
        for (const view of [false, true]) expect(inOneDraft(state, s, view)).toEqual(each);
        const onlyCommands = s.filter((x): x is CommandStep => x.kind === "command");
        expect(queued(state, onlyCommands)).toEqual(oneByOne(state, onlyCommands, v2).state);
      }),
      { numRuns: 1000 },
    );
  });
});
