/**
 * commander's usage errors as the CLI's one failure line. commander printed its own 2-3 lines
 * (`error: unknown option '--form'`, `(Did you mean --from?)`, `(add --help for usage)`) with no
 * error code, while every other failure is one line naming it (README, "Operators"): a new user's
 * trial. Each command's usage error is now a `StateSyncError("VALIDATION")` naming the command
 * and its help, printed by the program's one failure path (`statesync: VALIDATION: …`, exit 1).
 * Help and the version are printed by commander as before.
 */
import { Command, CommanderError } from "commander";
import { StateSyncError } from "@statesync/node";
import { printFailure } from "./output.js";

/** commander's exits that are no error: help asked for (status 0), or shown for no command (1). */
const NOT_ERRORS = new Set([
  "commander.helpDisplayed",
  "commander.help",
  "commander.version",
  "commander.executeSubCommandAsync",
]);

/**
 * A finished run that commander ended early without an error (help, the version): the status to
 * exit with (`main` sets it; nothing else is printed).
 */
export class ProgramExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = "ProgramExit";
  }
}

/**
 * How a run that commander ends early ends: `"exit"`, as a program on its own (what
 * `createProgram()` gives a script that reuses it): a usage error prints its one line (see
 * {@link usageError}) and exits 1, help and the version exit as commander does (0, or 1 for help
 * shown because no command was given); `"throw"`, for `main`, which prints and exits itself: a
 * usage error is thrown, help and the version as {@link ProgramExit}.
 */
export type UsageEnding = "exit" | "throw";

/**
 * Makes every command of `root` (itself included) end a usage error, help or the version as
 * `ending` says; commander's own error lines are never printed. Call once every command is
 * registered. (`"throw"` alone, for the exported program too, made a script's `--help` end in
 * an unhandled `ProgramExit`, exit 1: a review.)
 */
export function handleUsageErrors(root: Command, ending: UsageEnding): void {
  for (const command of [root, ...descendants(root)]) {
    command.configureOutput({ ...command.configureOutput(), outputError: () => undefined });
    command.showHelpAfterError(false);
    command.exitOverride((err: CommanderError) => {
      const done = NOT_ERRORS.has(err.code);
      if (ending === "exit") {
        // Returning lets commander exit with `err.exitCode`, as it did before this override.
        if (!done) printFailure(usageError(err, command));
        return;
      }
      if (done) throw new ProgramExit(err.exitCode);
      throw usageError(err, command);
    });
  }
}

function descendants(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...descendants(c)]);
}

/**
 * `VALIDATION`, one line: what commander found, the command it found it for, its advice
 * ("did you mean --from?", "give it once": the parenthesized lines after the first), and where
 * the usage is: `unknown option '--form' for "statesync history": did you mean --from?
 * (statesync history --help)`. `details`: `usage: true`, `commander`: commander's code.
 */
export function usageError(err: CommanderError, command: Command): StateSyncError {
  const path = commandPath(command);
  const [first = "", ...rest] = err.message.replace(/^error: /, "").split("\n");
  const advice = rest
    .map((line) => line.trim().replace(/^\((.*)\)$/, "$1"))
    .filter((line) => line.length > 0)
    .map((line) => line.charAt(0).toLowerCase() + line.slice(1))
    .join("; ");
  // "too many arguments for 'history'. Expected 0 arguments but got 2."
  const excess =
    /^too many arguments(?: for '[^']*')?\. Expected (\d+) arguments? but got (\d+)\.$/.exec(first);
  const what = excess ? "too many arguments" : first.replace(/\.$/, "");
  const more = [excess && `expected ${excess[1]} but got ${excess[2]}`, advice].filter(Boolean);
  const text = `${what} for "${path}"${more.length > 0 ? `: ${more.join("; ")}` : ""} (${path} --help)`;
  return new StateSyncError("VALIDATION", text, {
    cause: err,
    details: { usage: true, commander: err.code },
  });
}

/** "statesync history": the names from the program down to `command`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}
