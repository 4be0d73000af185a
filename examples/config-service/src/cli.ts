/**
 * `flags`: load a flagd flag definition file into the shared flags, or evaluate a flag from
 * them. Run as `npm run flags -w @statesync/example-config-service -- COMMAND` (or
 * `node dist/cli.js COMMAND`); `--help` on every command. Exit status 1 on any failure, with the
 * reason on stderr.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { openSynchronizer } from "@statesync/node";
import { z } from "zod";
import { FlagEvaluator, type FlagsState } from "./evaluate.js";
import { flagdConfigSchema, jsonSchema, variantKind, type Json } from "./flagd-schema.js";
import { flagdProblem } from "./flagd-validate.js";
import { flagsModel, type FlagsSynchronizer } from "./flags-model.js";
import { FLAGS_STREAM } from "./shared.js";

/** A failure the CLI reports as one line on stderr (exit status 1). */
class CliError extends Error {
  override readonly name = "CliError";
}

interface ConnectionOptions {
  server: string;
  stream: string;
  timeout: number;
}

const contextSchema = z.record(z.string(), jsonSchema);

function parseJson(what: string, schema: z.ZodType) {
  return (text: string): unknown => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new InvalidArgumentError(`${what} is not JSON: ${(error as Error).message}`);
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success)
      throw new InvalidArgumentError(`${what}: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  };
}

function parseTimeout(text: string): number {
  const ms = Number(text);
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new InvalidArgumentError("a positive number of milliseconds");
  }
  return ms;
}

/**
 * Opens a replica of the flags, caught up with the stream within `timeout` ms, runs `use` and
 * closes it. No snapshots on disk and no following of the log: the CLI is short-lived.
 */
async function withFlags<R>(
  options: ConnectionOptions,
  use: (flags: FlagsSynchronizer, signal: AbortSignal) => Promise<R>,
  access: { create: boolean },
): Promise<R> {
  const signal = AbortSignal.timeout(options.timeout);
  const flags = await openSynchronizer({
    servers: options.server,
    stream: options.stream,
    model: flagsModel,
    snapshots: false,
    compaction: false,
    live: false, // one-shot: catch up, act, close
    // Only `load` may create the stream: a mistyped --stream on `evaluate` must not write.
    create: access.create,
  });
  try {
    try {
      await flags.synced({ signal });
    } catch (error) {
      throw new CliError(
        `cannot read stream "${options.stream}" on ${options.server} within ` +
          `${options.timeout} ms (${(error as Error).message})`,
      );
    }
    return await use(flags, signal);
  } finally {
    await flags.close();
  }
}

async function load(file: string, options: ConnectionOptions): Promise<void> {
  // npm runs workspace scripts in the workspace: resolve FILE from where `npm run` was typed.
  const path = resolve(process.env["INIT_CWD"] ?? process.cwd(), file);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  const problem = flagdProblem(text);
  if (problem !== undefined) throw new CliError(`${path}: ${problem}`);
  const document = flagdConfigSchema.parse(JSON.parse(text));
  await withFlags(
    options,
    async (flags, signal) => {
      const { revision } = await flags.update("replaceDocument", { document }, { signal });
      const count = Object.keys(document.flags).length;
      console.log(`loaded ${count} flag${count === 1 ? "" : "s"} from ${path} → rev ${revision}`);
    },
    { create: true },
  );
}

/** The variant values of `flag` (none when it is unknown). */
function variantsOf(state: FlagsState, flag: string): Json[] {
  const flags = state.flags as Record<string, { variants: object }>;
  return Object.hasOwn(flags, flag) ? (Object.values(flags[flag]!.variants) as Json[]) : [];
}

async function evaluate(
  flag: string,
  options: ConnectionOptions & { context: Record<string, Json>; default?: Json },
): Promise<void> {
  await withFlags(
    options,
    async (flags) => {
      const variants = variantsOf(flags.state, flag);
      const fallback = options.default ?? null;
      const kind = variantKind(options.default ?? variants[0] ?? null);
      const result = new FlagEvaluator().evaluate(
        flags.state,
        flag,
        options.context,
        fallback,
        kind,
      );
      const line = { value: result.value, variant: result.variant ?? null, reason: result.reason };
      console.log(
        JSON.stringify(result.errorCode ? { ...line, errorCode: result.errorCode } : line),
      );
      if (result.reason === "ERROR") process.exitCode = 1;
    },
    { create: false },
  );
}

function withConnection(command: Command): Command {
  return command
    .option("--server <url>", "NATS server", "nats://127.0.0.1:4222")
    .option("--stream <name>", "JetStream stream of the flags", FLAGS_STREAM)
    .addOption(
      new Option("--timeout <ms>", "give up reaching the flags after this long")
        .default(10_000)
        .argParser(parseTimeout),
    );
}

/** The `flags` program (commander). */
function flagsProgram(): Command {
  const program = new Command("flags")
    .description("Load and evaluate the shared flagd flags of the config-service example")
    .showHelpAfterError();
  withConnection(
    program
      .command("load")
      .description(
        "Replace the whole flag document with a flagd flag definition file, in one conditional " +
          "update (flagd's strict validation decides what is accepted)",
      )
      .argument("<file>", "flagd JSON file, relative to where the command is run"),
  ).action((file: string, options: ConnectionOptions) => load(file, options));
  withConnection(
    program
      .command("evaluate")
      .description(
        "Evaluate FLAG with flagd-core and print one JSON line: value, variant, reason " +
          "(and errorCode when reason is ERROR, which exits with status 1)",
      )
      .argument("<flag>", "flag key")
      .addOption(
        new Option("--context <json>", "evaluation context, a JSON object (may be nested)")
          .default({})
          .argParser(parseJson("--context", contextSchema)),
      )
      .addOption(
        new Option(
          "--default <json>",
          "the caller's default value, returned when no variant is served (default: null, of " +
            "the type of the flag's variants)",
        ).argParser(parseJson("--default", jsonSchema)),
      ),
  ).action((flag: string, options: ConnectionOptions & { context: Record<string, Json> }) =>
    evaluate(flag, options),
  );
  return program;
}

flagsProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
