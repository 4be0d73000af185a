/**
 * `--model PATH[#export]`: loads a model (a `defineModel` result) from a JavaScript ES module.
 * The module is imported as it is (it resolves `@statesync/*` and `zod` from its own location),
 * so the model must be built: `.js` or `.mjs`, not TypeScript.
 */
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { StateSyncError, type CommandMap, type Model } from "@statesync/node";
import { z } from "zod";

/** What a model looks like from outside (see `defineModel`). */
const modelShape = z.object({
  name: z.string().min(1),
  version: z.number().int().nonnegative(),
  initialHash: z.string().regex(/^[0-9a-f]{64}$/),
  state: z.custom<z.ZodType>(
    (v) => typeof (v as { safeParse?: unknown } | null)?.safeParse === "function",
  ),
  initial: z.unknown(),
  commands: z.record(z.string(), z.unknown()),
});

/** The absolute path of the model module being imported now, if any (see `bin.ts`). */
let loading: string | undefined;

/**
 * The model module whose import is under way: when the process runs out of work then, its
 * top-level await never settled (`bin.ts` says so instead of exiting 0 silently).
 */
export function modelBeingLoaded(): string | undefined {
  return loading;
}

/**
 * What a module threw, for a message: an Error's message, a string as it is, anything else as
 * JSON (a thrown string read `undefined`: a fresh-eyes trial).
 */
function thrownText(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message;
  if (typeof thrown === "string") return thrown;
  try {
    return JSON.stringify(thrown) ?? String(thrown);
  } catch {
    return String(thrown);
  }
}

/** A model of any state. */
export type AnyModel = Model<unknown, CommandMap<unknown>>;

/** Splits `PATH#name` (the last `#`) into the file and the export name (default `default`). */
export function parseModelSpec(spec: string): { file: string; exportName: string } {
  const hash = spec.lastIndexOf("#");
  if (hash < 0) return { file: spec, exportName: "default" };
  return { file: spec.slice(0, hash), exportName: spec.slice(hash + 1) };
}

/**
 * Imports the module named by `spec` (`PATH` or `PATH#export`, relative to the working
 * directory) and returns its default export, or the named one, checked to be a model.
 *
 * Throws `VALIDATION` when the path is not a `.js`/`.mjs` file, the module fails to load, the
 * export is missing, or it is not a `defineModel` result.
 */
export async function loadModel(spec: string): Promise<AnyModel> {
  const { file, exportName } = parseModelSpec(spec);
  if (!/\.(m?js)$/.test(file) || exportName === "") {
    throw new StateSyncError(
      "VALIDATION",
      `--model ${spec}: give a JavaScript ES module (.js or .mjs), optionally with #export`,
    );
  }
  const path = resolve(file);
  const isFile = await stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) throw new StateSyncError("VALIDATION", `--model ${path} is not a file`);
  let module: Record<string, unknown>;
  loading = path;
  try {
    module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (cause) {
    throw new StateSyncError(
      "VALIDATION",
      `--model ${path} could not be loaded: ${thrownText(cause)}`,
      { cause },
    );
  } finally {
    loading = undefined;
  }
  if (!(exportName in module)) {
    const names = Object.keys(module).join(", ") || "none";
    throw new StateSyncError(
      "VALIDATION",
      `--model ${path} has no ${exportName === "default" ? "default export" : `export named ${exportName}`} (its exports: ${names}); name one with ${file}#<export>`,
    );
  }
  const candidate = module[exportName];
  if (!modelShape.safeParse(candidate).success) {
    throw new StateSyncError(
      "VALIDATION",
      `--model ${path}: export ${exportName} is not a model (a defineModel result)`,
    );
  }
  return candidate as AnyModel;
}
