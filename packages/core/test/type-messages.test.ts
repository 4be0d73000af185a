// The type errors statesync means to give are readable: each names the problem and what to write
// instead. types.typecheck.ts checks that the mistakes below are type errors at all; this file
// compiles them with the TypeScript API against the built declarations and reads the messages.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");

/** The compiler options the repository's type-checked tests use (tsconfig.test.json). */
const options = (() => {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.test.json"), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  // No DOM and no Node types: the snippets need neither, and the program is built faster.
  return { ...parsed!.options, lib: ["lib.es2022.d.ts"], types: [] };
})();

const PREAMBLE = `
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, type StateSynchronizer } from "@statesync/core";
const counter = defineModel({
  name: "counter",
  state: z.object({ count: z.number() }),
  initial: { count: 0 },
  commands: {},
});
const sync = await createSynchronizer({ log: new MemoryLog(), model: counter });
`;

const SNIPPETS = {
  preamble: "export {};",
  asyncRecipe: "await sync.update(async (draft) => { draft.count += 1; });",
  modelAsState: "export const typed: StateSynchronizer<typeof counter> = sync;",
  dateState: `
    export const dated = defineModel({
      name: "dated",
      state: z.object({ at: z.date() }),
      initial: { at: new Date(0) },
      commands: {},
    });`,
  dateArgs: `
    export const dated = defineModel({
      name: "dated",
      state: z.object({ at: z.number() }),
      initial: { at: 0 },
      commands: {
        set: {
          args: z.object({ at: z.date() }),
          apply(draft, { at }) { draft.at = at.getTime(); },
        },
      },
    });`,
};

/**
 * The messages of the type errors of each snippet (after the shared preamble), one string per
 * error, from one program with a file per snippet beside this test (so `@statesync/core` and
 * `zod` resolve as they do for the tests).
 */
function typeErrors<K extends string>(
  snippets: Record<K, string>,
  extra: ts.CompilerOptions = {},
): Record<K | "preamble", string[]> {
  const files = new Map(
    Object.entries<string>(snippets).map(([name, body]) => [
      join(root, `packages/core/test/__type-message-${name}__.ts`),
      { name, text: `${PREAMBLE}\n${body}\n` },
    ]),
  );
  const compilerOptions = { ...options, ...extra };
  const host = ts.createCompilerHost(compilerOptions);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => files.has(f) || fileExists.call(host, f);
  host.readFile = (f) => files.get(f)?.text ?? readFile.call(host, f);
  host.getSourceFile = (f, language, ...rest) => {
    const snippet = files.get(f);
    return snippet
      ? ts.createSourceFile(f, snippet.text, language, true)
      : getSourceFile.call(host, f, language, ...rest);
  };
  const program = ts.createProgram([...files.keys()], compilerOptions, host);
  const errors = Object.fromEntries(
    ["preamble", ...Object.keys(snippets)].map((name) => [name, [] as string[]]),
  );
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const name = (d.file && files.get(d.file.fileName)?.name) ?? "preamble";
    errors[name]!.push(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  }
  return errors as Record<K | "preamble", string[]>;
}

describe("type errors", () => {
  const errors = typeErrors(SNIPPETS);

  it("compiles the preamble alone without errors", () => {
    expect(errors.preamble).toEqual([]);
  });

  it("an async recipe: says recipes must be synchronous", () => {
    expect(errors.asyncRecipe).toEqual([expect.stringContaining("recipes must be synchronous")]);
  });

  it("StateSynchronizer<typeof model>: says to write SynchronizerOf<typeof model>", () => {
    expect(errors.modelAsState).toEqual([
      expect.stringContaining("for a model write SynchronizerOf<typeof model>"),
    ]);
    // The first line names both types; the explanation follows at once, within three lines.
    expect(errors.modelAsState[0]!.split("\n").length).toBeLessThanOrEqual(4);
  });

  it("a state schema that is not JSON: names the problem at defineModel", () => {
    expect(errors.dateState).toEqual([
      expect.stringContaining("the model's state schema admits values that are not JSON"),
    ]);
  });

  it("command arguments that are not JSON: name the problem at the command", () => {
    expect(errors.dateArgs).toEqual([
      expect.stringContaining("this command's args schema admits values that are not JSON"),
    ]);
  });
});

/**
 * Valid programs the checks must not refuse (a fresh-eyes trial found both refused): a helper
 * generic in the recipe's result, and `.optional()` properties under
 * `exactOptionalPropertyTypes` (zod infers `a?: string | undefined`).
 */
describe("valid programs stay valid", () => {
  const VALID = {
    genericRecipe: `
      import type { Draft } from "immer";
      import type { Recipe } from "@statesync/core";
      export async function run<S, R>(s: StateSynchronizer<S>, recipe: Recipe<S, R>) {
        return s.update(recipe);
      }
      export async function run2<S, R>(s: StateSynchronizer<S>, recipe: (d: Draft<S>) => R) {
        return (await s.update(recipe)).result;
      }
      export const five = run(sync, () => 5);`,
    optionals: `
      export const opt = defineModel({
        name: "opt",
        state: z.object({ a: z.string().optional(), b: z.object({ c: z.number().optional() }) }),
        initial: { b: {} },
        commands: {
          set: {
            args: z.object({ a: z.string().optional(), d: z.string().default("x") }),
            apply(draft, { a }) { if (a !== undefined) draft.a = a; },
          },
        },
      });`,
  };

  it("compile without errors, with and without exactOptionalPropertyTypes", () => {
    expect(typeErrors(VALID)).toEqual({ preamble: [], genericRecipe: [], optionals: [] });
    expect(typeErrors(VALID, { exactOptionalPropertyTypes: true })).toEqual({
      preamble: [],
      genericRecipe: [],
      optionals: [],
    });
  });
});
