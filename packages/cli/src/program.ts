/**
 * The `statesync` program: one commander `Command` with a subcommand per file in `commands/`.
 * Every subcommand takes the common options (`options.ts`), validates its arguments with zod,
 * prints a table or `--json`, and on failure prints `statesync: CODE: message` on stderr and
 * exits with status 1; commander's usage errors too, as `VALIDATION` (usage-errors.ts).
 */
import { Command } from "commander";
import { registerCompact } from "./commands/compact.js";
import { registerExport } from "./commands/export.js";
import { registerHistory } from "./commands/history.js";
import { registerImport } from "./commands/import.js";
import { registerInfo } from "./commands/info.js";
import { registerMigrate } from "./commands/migrate.js";
import { registerState } from "./commands/state.js";
import { registerTail } from "./commands/tail.js";
import { registerVerify } from "./commands/verify.js";
import { handleUsageErrors, ProgramExit, type UsageEnding } from "./usage-errors.js";

/** The CLI's version (the package's). */
export const CLI_VERSION = "0.1.0";

/**
 * Builds the `statesync` program with all its commands, ending as the `statesync` binary does: a
 * usage error prints its one `statesync: VALIDATION: …` line and exits 1; help and the version
 * print and exit as commander does (0; 1 for the help shown when no command is given).
 */
export function createProgram(): Command {
  return buildProgram("exit");
}

/** The program, its usage errors, help and version ending as `ending` says. */
function buildProgram(ending: UsageEnding): Command {
  const program = new Command("statesync")
    .description(
      "Look into, check, compact, back up and restore statesync streams on NATS JetStream.\n" +
        "Every command takes --stream (and --key for a shared stream), --server and credentials; --json for scripts.",
    )
    .version(CLI_VERSION)
    .addHelpText(
      "after",
      "\nExamples:\n" +
        "  statesync info --stream COUNTER\n" +
        "  statesync history --stream COUNTER --from 40\n" +
        "  statesync state --stream COUNTER --model ./dist/counter.js#counter\n" +
        "  statesync export --stream COUNTER --model ./dist/counter.js backup.json\n" +
        "  statesync import backup.json --stream COUNTER_RESTORED\n" +
        "  statesync migrate --stream COUNTER --model ./dist/counter-v2.js --dry-run\n",
    );
  registerInfo(program);
  registerHistory(program);
  registerTail(program);
  registerState(program);
  registerVerify(program);
  registerCompact(program);
  registerExport(program);
  registerImport(program);
  registerMigrate(program);
  for (const command of program.commands) refuseRepeats(command);
  handleUsageErrors(program, ending);
  return program;
}

/**
 * Makes `command` refuse an option with a value given twice (`--stream A --stream B`): commander
 * keeps the last in silence, and a command such as `compact` then writes to a stream the
 * operator may not have meant (a fresh-eyes trial). A usage error: status 1, nothing done.
 */
function refuseRepeats(command: Command): void {
  for (const option of command.options) {
    if (!option.required && !option.optional) continue; // a flag (--json) given twice is harmless
    let seen = 0;
    command.on(`option:${option.name()}`, () => {
      seen += 1;
      if (seen > 1) {
        command.error(`error: option '${option.flags}' given more than once\n(give it once)`, {
          code: "statesync.repeatedOption",
        });
      }
    });
  }
}

/**
 * Runs the program on `argv` (`process.argv`); resolves when the command is done, or once
 * commander printed help or the version (`process.exitCode` set: 0, or 1 for help shown because
 * no command was given). Rejects with the command's failure; a usage error is `VALIDATION`.
 */
export async function main(argv: readonly string[]): Promise<void> {
  // An empty STATESYNC_SERVER is unset, as docs/cli.md reads it (commander took it for an empty
  // --server: "--server is empty", though none was given; a fresh-eyes trial, stop 26).
  if (process.env.STATESYNC_SERVER === "") delete process.env.STATESYNC_SERVER;
  try {
    await buildProgram("throw").parseAsync([...argv]);
  } catch (e) {
    if (!(e instanceof ProgramExit)) throw e;
    process.exitCode = e.exitCode;
  }
}
