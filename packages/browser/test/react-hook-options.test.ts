// useSynchronizedState's options and arguments are checked strictly, as every statesync option:
// VALIDATION "invalid useSynchronizedState options", naming the option. Before, a typo
// (`{ veiw: "confirmed" }`) or a wrong value (`{ view: "confimred" }`) showed the optimistic view
// in silence, and options in the selector's place failed deep in React ("selector is not a
// function"). Rendered with react-dom/server in Node: the check runs in the render.
import { createSynchronizer, MemoryLog } from "@statesync/browser";
import { useSynchronizedState } from "@statesync/browser/react";
import { createElement } from "react";
import { renderToString } from "react-dom/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusalProblem, shown, wrongValues } from "../../node/test/support/option-refusals.js";
import { notes } from "./support/models.js";

let sync: Awaited<ReturnType<typeof open>>;
const open = () => createSynchronizer({ log: new MemoryLog(), model: notes, snapshots: false });
beforeAll(async () => {
  sync = await open();
  await sync.update("add", { text: "one" });
});
afterAll(() => sync.close());

/** What a component calling `useSynchronizedState(sync, ...args)` renders, or throws. */
function rendered(...args: unknown[]): unknown {
  function Probe() {
    const hook = useSynchronizedState as (...a: unknown[]) => unknown;
    return JSON.stringify(hook(sync, ...args));
  }
  try {
    return renderToString(createElement(Probe)).replaceAll("&quot;", '"');
  } catch (error) {
    return error;
  }
}

const notesOf = (s: { notes: readonly string[] }) => s.notes;

describe("useSynchronizedState refuses", () => {
  it("a view that is none, naming view", () => {
    for (const view of ["confimred", "Confirmed", null, ...wrongValues]) {
      for (const args of [
        [notesOf, { view }],
        [notesOf, Object.is, { view }],
        [undefined, { view }],
      ]) {
        const problem = refusalProblem(rendered(...args), "useSynchronizedState", "view");
        expect(problem, `view ${shown(view)}`).toBeUndefined();
      }
    }
  });

  it("an unknown option, naming it", () => {
    for (const args of [
      [notesOf, { veiw: "confirmed" }],
      [notesOf, Object.is, { veiw: 1 }],
    ]) {
      expect(rendered(...args)).toMatchObject({
        code: "VALIDATION",
        message: 'invalid useSynchronizedState options: ✖ Unrecognized key: "veiw"',
      });
    }
  });

  it("options that are no object", () => {
    for (const options of [null, 7, "confirmed", true, []]) {
      for (const args of [
        [notesOf, options],
        [notesOf, Object.is, options],
      ]) {
        expect(rendered(...args), shown(options)).toMatchObject({
          code: "VALIDATION",
          message: "invalid useSynchronizedState options: ✖ options must be { view? }, or left out",
        });
      }
    }
  });

  it("options given both third and fourth", () => {
    expect(rendered(notesOf, { view: "confirmed" }, { view: "optimistic" })).toMatchObject({
      code: "VALIDATION",
      message:
        "invalid useSynchronizedState options: ✖ options come third (without isEqual) or " +
        "fourth, not both",
    });
  });

  it("a selector or an isEqual that is no function, naming it (options in the selector's place)", () => {
    const error = rendered({ view: "confirmed" });
    expect(refusalProblem(error, "useSynchronizedState", "selector")).toBeUndefined();
    expect((error as Error).message).toMatch(/useSynchronizedState\(sync, undefined, \{ view \}\)/);
    for (const selector of [null, 7, "notes"]) {
      const problem = refusalProblem(rendered(selector), "useSynchronizedState", "selector");
      expect(problem, shown(selector)).toBeUndefined();
    }
    const isEqual = rendered(notesOf, 7, { view: "confirmed" });
    expect(refusalProblem(isEqual, "useSynchronizedState", "isEqual")).toBeUndefined();
  });
});

it("takes every documented form (which view each shows: react-hooks.browser.test.tsx)", () => {
  const whole = JSON.stringify(sync.optimisticState);
  const forms: Array<[unknown[], string]> = [
    [[], whole],
    [[undefined], whole],
    [[notesOf], '["one"]'],
    [[notesOf, Object.is], '["one"]'],
    [[notesOf, { view: "confirmed" }], '["one"]'],
    [[notesOf, undefined, { view: "optimistic" }], '["one"]'],
    [[notesOf, Object.is, { view: "confirmed" }], '["one"]'],
    [[undefined, { view: "confirmed" }], JSON.stringify(sync.state)],
    [[notesOf, {}], '["one"]'],
    [[notesOf, { view: undefined }], '["one"]'],
  ];
  for (const [args, expected] of forms) {
    expect(rendered(...args), JSON.stringify(args)).toBe(expected);
  }
});
