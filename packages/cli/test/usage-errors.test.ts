import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { collectOutput, runCli, type CliResult } from "./helpers.js";

/**
 * Runs `createProgram().parseAsync(args)` in a script of its own, as a script that reuses the
 * program (`@statesync/cli` exports it) does: no `main`, no `bin.js`.
 */
function runEmbedded(args: string[]): Promise<CliResult> {
  const script =
    'import { createProgram } from "@statesync/cli";\n' +
    'await createProgram().parseAsync(["node", "statesync", ...process.argv.slice(1)]);\n';
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script, "--", ...args], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      env: { ...process.env, STATESYNC_SERVER: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    collectOutput(child, resolve, reject);
  });
}

/**
 * Usage errors commander finds (an unknown option or command, a missing or extra argument, an
 * option without its value, one given twice) print the one line every failure prints, naming
 * its code (`statesync: VALIDATION: …`), and exit 1 (README, "Operators"; docs/cli.md). A new
 * user's trial: `statesync history --form 3` printed commander's 3 lines ("error: unknown option
 * '--form'", "(Did you mean --from?)", "(add --help for usage)") and no code. None of these runs
 * the command, so no server is needed. `--help` and `--version` print as before, exit 0.
 */
describe("statesync usage errors", () => {
  it.each([
    [
      ["history", "--form", "3"],
      `statesync: VALIDATION: unknown option '--form' for "statesync history": did you mean --from? (statesync history --help)`,
    ],
    [
      ["--bogus"],
      `statesync: VALIDATION: unknown option '--bogus' for "statesync" (statesync --help)`,
    ],
    [
      ["nosuch"],
      `statesync: VALIDATION: unknown command 'nosuch' for "statesync" (statesync --help)`,
    ],
    [
      ["histroy"],
      `statesync: VALIDATION: unknown command 'histroy' for "statesync": did you mean history? (statesync --help)`,
    ],
    [
      ["history", "--from"],
      `statesync: VALIDATION: option '--from <revision>' argument missing for "statesync history" (statesync history --help)`,
    ],
    [
      ["history", "a", "b"],
      `statesync: VALIDATION: too many arguments for "statesync history": expected 0 but got 2 (statesync history --help)`,
    ],
    [
      ["export", "--stream", "S"],
      `statesync: VALIDATION: missing required argument 'file' for "statesync export" (statesync export --help)`,
    ],
    [
      ["compact", "--stream", "Q", "--stream", "S", "--model", "m.js"],
      `statesync: VALIDATION: option '--stream <name>' given more than once for "statesync compact": give it once (statesync compact --help)`,
    ],
  ])("statesync %j: one line naming VALIDATION, exit 1", async (args, line) => {
    const run = await runCli(args);
    expect(run).toMatchObject({ code: 1, stdout: "", stderr: `${line}\n` });
  });

  it("--help and --version print as before, exit 0", async () => {
    const help = await runCli(["history", "--help"]);
    expect(help).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toMatch(/^Usage: statesync history \[options\]\n\nthe retained entries/);
    expect(help.stdout).toContain("  -h, --help                 display help for command\n");
    const viaHelp = await runCli(["help", "history"]);
    expect(viaHelp).toMatchObject({ code: 0, stdout: help.stdout, stderr: "" });
    expect(await runCli(["--version"])).toMatchObject({ code: 0, stdout: "0.1.0\n", stderr: "" });
    // No command at all: the program's help on stderr, exit 1, as commander prints it.
    const bare = await runCli([]);
    expect(bare).toMatchObject({ code: 1, stdout: "" });
    expect(bare.stderr).toMatch(/^Usage: statesync \[options\] \[command\]\n/);
  });

  it("createProgram() ends as the binary does: help and the version exit 0, a usage error is its one line", async () => {
    // Review: the exported program threw an internal ProgramExit after printing the help or the
    // version (an unhandled rejection: a stack trace, exit 1), and a usage error printed nothing
    // of its own (only the crash of an unhandled StateSyncError).
    const help = await runEmbedded(["history", "--help"]);
    expect(help).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toMatch(/^Usage: statesync history \[options\]\n/);
    expect(await runEmbedded(["--version"])).toMatchObject({
      code: 0,
      stdout: "0.1.0\n",
      stderr: "",
    });
    const bare = await runEmbedded([]);
    expect(bare).toMatchObject({ code: 1, stdout: "" });
    expect(bare.stderr).toMatch(/^Usage: statesync \[options\] \[command\]\n/);
    expect(await runEmbedded(["history", "--form", "3"])).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `statesync: VALIDATION: unknown option '--form' for "statesync history": did you mean --from? (statesync history --help)\n`,
    });
  });
});
