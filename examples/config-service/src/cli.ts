/**
 * `flags`: load a flagd flag definition file into the shared flags, evaluate a flag from them,
 * or switch them to model version 2 (the README's rolling deploy). Run as `npm run flags -w @statesync/example-config-service -- COMMAND` (or
 * `node dist/cli.js COMMAND`); `--help` on every command. Exit status 1 on any failure, with the
 * reason on stderr.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { openSynchronizer, StateSyncError } from "@statesync/node";
import { z } from "zod";
import { FlagEvaluator, type FlagsState } from "./evaluate.js";
import { flagdConfigSchema, jsonSchema, variantKind, type Json } from "./flagd-schema.js";
import { flagdProblem } from "./flagd-validate.js";
import { FLAGS_MODELS, type FlagsReplica, type FlagsVersion } from "./flags-replica.js";
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

/** `--model-version`: a version of the flags model. */
function parseVersion(text: string): FlagsVersion {
  if (text !== "1" && text !== "2") throw new InvalidArgumentError("1 or 2");
  return Number(text) as FlagsVersion;
}

/** The refusals a version mismatch gives, as what the operator does about them. */
function versionHint(error: unknown): unknown {
  if (!(error instanceof StateSyncError)) return error;
  if (error.code === "MODEL_UPGRADED") {
    const needed = String(error.details["needed"]);
    return new CliError(`${error.message} (load with --model-version ${needed})`);
  }
  if (error.code === "UPGRADE_PENDING") {
    return new CliError(
      "the flags are still at model version 1: load with --model-version 1, or switch them " +
        "first with `flags upgrade`",
    );
  }
  return error;
}

/**
 * Opens a replica of the flags at model `version` (`upgrade: "manual"`: it never switches the
 * log by itself; version 2 reads a version-1 log migrated up), caught up with the stream within
 * `timeout` ms, runs `use` and closes it. No snapshots on disk and no following of the log: the
 * CLI is short-lived.
 */
async function withFlags<R>(
  options: ConnectionOptions,
  version: FlagsVersion,
  use: (flags: FlagsReplica, signal: AbortSignal) => Promise<R>,
  access: { create: boolean },
): Promise<R> {
  const signal = AbortSignal.timeout(options.timeout);
  const opened = await openSynchronizer({
    servers: options.server,
    stream: options.stream,
    model: FLAGS_MODELS[version],
    upgrade: "manual",
    snapshots: false,
    compaction: false,
    live: false, // one-shot: catch up, act, close
    // Only `load` may create the stream: a mistyped --stream on `evaluate` must not write.
    create: access.create,
  });
  const flags = opened as unknown as FlagsReplica;
  try {
    try {
      await flags.synced({ signal });
    } catch (error) {
      if (flags.stallReason !== undefined) throw error;
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

async function load(
  file: string,
  options: ConnectionOptions & { modelVersion: FlagsVersion },
): Promise<void> {
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
    options.modelVersion,
    async (flags, signal) => {
      const { revision } = await flags.update("replaceDocument", { document }, { signal });
      const count = Object.keys(document.flags).length;
      console.log(`loaded ${count} flag${count === 1 ? "" : "s"} from ${path} → rev ${revision}`);
    },
    { create: true },
  ).catch((error: unknown) => {
    throw versionHint(error);
  });
}

/** Switches the flags to model version 2 (once; a no-op when they already are). */
async function upgrade(options: ConnectionOptions): Promise<void> {
  await withFlags(
    options,
    2,
    async (flags) => {
      const pending = flags.upgradePending;
      const { revision } = await flags.upgrade();
      console.log(
        pending
          ? `switched the flags to model version 2 → rev ${revision}`
          : `the flags are at model version 2 already (rev ${revision})`,
      );
    },
    { create: false },
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
  // Version 2 reads a log of either version; evaluations do not depend on it.
  await withFlags(
    options,
    2,
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
      .argument("<file>", "flagd JSON file, relative to where the command is run")
      .addOption(
        new Option(
          "--model-version <n>",
          "the flags model version to write with: 1 until the switch (`flags upgrade`), 2 after",
        )
          .default(1)
          .argParser(parseVersion),
      ),
  ).action((file: string, options: ConnectionOptions & { modelVersion: FlagsVersion }) =>
    load(file, options),
  );
  withConnection(
    program
      .command("upgrade")
      .description(
        "Switch the flags to model version 2 (flags name their owners): one switch entry; " +
          "version-1 services then stop with MODEL_UPGRADED until they run version 2",
      ),
  ).action((options: ConnectionOptions) => upgrade(options));
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
