import { describe, expect, it } from "vitest";
import { boardModel } from "../src/board-model.js";

/*
 * What each board command reads, counted (issue 12: a page with 20,000 queued edits must open in
 * seconds). The view of queued edits runs every one of them on the board: when a command reads
 * the whole board, n queued commands cost n × board, and the board grows with them (version 1's
 * addCard copied and scanned every card: 20,000 queued addCards took 75 s to show). So each
 * command must read only what it acts on: the same number of reads on a board whose other lists
 * hold 10 cards or 1,000.
 *
 * The board is a plain object behind a proxy that counts every read of any of its objects (a
 * property, a key list, a descriptor, `in`), built by the model's own commands from its initial
 * state, so the test holds for any shape of the state.
 */

type Args = Record<string, unknown>;
type Commands = Record<string, { apply(draft: unknown, args: Args, ctx: unknown): void }>;
const commands = boardModel.commands as unknown as Commands;

/** `boardModel.initial` as a mutable copy, with `cards` cards added to each list named. */
function boardWith(cards: Record<string, number>): object {
  const board = JSON.parse(JSON.stringify(boardModel.initial)) as object;
  for (const [listId, count] of Object.entries(cards)) {
    for (let i = 0; i < count; i++)
      run(board, "addCard", { id: `${listId}-${i}`, listId, title: "T" });
  }
  return board;
}

function run(board: object, name: string, args: Args): void {
  commands[name]!.apply(board, args, {});
}

/** `root` behind proxies (one per object, made as it is reached) that count what is read. */
function counting(root: object): { board: object; reads: () => number } {
  let reads = 0;
  const proxies = new WeakMap<object, object>();
  const targets = new WeakMap<object, object>();
  const wrap = (v: unknown): unknown => {
    if (v === null || typeof v !== "object") return v;
    let p = proxies.get(v);
    if (!p) {
      p = new Proxy(v, handler);
      proxies.set(v, p);
      targets.set(p, v);
    }
    return p;
  };
  const unwrap = (v: unknown): unknown =>
    v !== null && typeof v === "object" ? (targets.get(v) ?? v) : v;
  const handler: ProxyHandler<object> = {
    get(t, k) {
      if (typeof k === "symbol") return Reflect.get(t, k);
      reads++;
      return wrap(Reflect.get(t, k));
    },
    has(t, k) {
      reads++;
      return Reflect.has(t, k);
    },
    ownKeys(t) {
      const keys = Reflect.ownKeys(t);
      reads += keys.length;
      return keys;
    },
    getOwnPropertyDescriptor(t, k) {
      reads++;
      return Reflect.getOwnPropertyDescriptor(t, k);
    },
    set: (t, k, v) => Reflect.set(t, k, unwrap(v)),
    defineProperty: (t, k, d) =>
      Reflect.defineProperty(t, k, "value" in d ? { ...d, value: unwrap(d.value) } : d),
  };
  return { board: wrap(root) as object, reads: () => reads };
}

/** The reads of command `name` with `args` on `board` (which it must change, not throw). */
function readsOf(board: object, name: string, args: Args): number {
  const before = JSON.stringify(board);
  const { board: counted, reads } = counting(board);
  run(counted, name, args);
  const n = reads();
  expect(JSON.stringify(board)).not.toBe(before);
  return n;
}

/** Each command on cards and lists other than "doing", whose size varies. */
const cases: Array<[string, Args]> = [
  ["addCard", { id: "new", listId: "todo", title: "New" }],
  ["renameCard", { cardId: "todo-1", title: "Renamed" }],
  ["moveCard", { cardId: "todo-3", toListId: "todo", beforeCardId: "todo-0" }],
  ["moveCard", { cardId: "todo-1", toListId: "done", beforeCardId: null }],
  ["deleteCard", { cardId: "todo-2" }],
  ["addList", { id: "later", title: "Later" }],
  ["renameList", { listId: "todo", title: "Now" }],
  ["moveList", { listId: "done", beforeListId: "todo" }],
  ["deleteList", { listId: "done" }],
];

describe("board commands read only what they act on", () => {
  for (const [name, args] of cases) {
    it(`${name} ${JSON.stringify(args)}: as many reads with 1,000 cards in another list as with 10`, () => {
      const small = readsOf(boardWith({ todo: 5, doing: 10, done: 2 }), name, args);
      const large = readsOf(boardWith({ todo: 5, doing: 1_000, done: 2 }), name, args);
      expect(large).toBe(small);
    });
  }

  it("addCard and renameCard read as much in a list of 1,000 cards as in one of 5", () => {
    for (const [name, args] of [cases[0]!, cases[1]!]) {
      const small = readsOf(boardWith({ todo: 5 }), name, args);
      const large = readsOf(boardWith({ todo: 1_000 }), name, args);
      expect(large).toBe(small);
    }
  });

  it("the counting proxy sees a command that reads the whole board", () => {
    // A command reading every card, as version 1's did: the count grows with the board.
    const scan = (board: object) => {
      const { board: counted, reads } = counting(board);
      JSON.stringify(counted);
      return reads();
    };
    expect(scan(boardWith({ doing: 1_000 }))).toBeGreaterThan(scan(boardWith({ doing: 10 })) + 990);
  });
});
