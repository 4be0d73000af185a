#!/usr/bin/env node
/**
 * The `statesync` executable: `statesync --help`.
 *
 * The process exits as soon as its command is done (after stdout and stderr are flushed): a
 * nats.js ordered consumer whose stream was deleted under it can leave a retry timer behind
 * after its follower stopped and the connection closed, which kept `tail` alive for minutes.
 *
 * A reader that closes the output pipe early (`statesync history … | head -5`) has all it wants:
 * the process then stops at once, quietly, with the exit status it had (0 unless the command had
 * failed), as Unix tools do, instead of crashing on `EPIPE`. Commands print only once their work
 * is done (`tail` only reads), so stopping there never cuts a write to the server short.
 */
import { StateSyncError } from "@statesync/node";
import { modelBeingLoaded } from "./model-file.js";
import { main } from "./program.js";
import { errorLine, printFailure } from "./output.js";

/** Resolves once everything written to `stream` so far is handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

/**
 * Stops the process when `stream` fails: quietly, with the current exit status, when its reader
 * went away (`EPIPE`); otherwise, with the one error line (on stderr, when that is not the
 * stream that failed) and exit status 1.
 */
function exitWhenBroken(stream: NodeJS.WriteStream): void {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    ending = true;
    if (error.code === "EPIPE") process.exit();
    if (stream !== process.stderr) process.stderr.write(`${errorLine(error)}\n`);
    process.exit(1);
  });
}

/** Set when this file ends the process on a broken output stream (above). */
let ending = false;

exitWhenBroken(process.stdout);
exitWhenBroken(process.stderr);

/** Set once the command settled: then the process exits by itself (below). */
let settled = false;

/** The failure of a command still pending when the event loop has nothing left to run. */
function unfinished(): unknown {
  const model = modelBeingLoaded();
  if (model !== undefined) {
    return new StateSyncError(
      "VALIDATION",
      `--model ${model} never finished loading: its top-level await never settled (nothing was left to wait for)`,
    );
  }
  return new Error("the command did not finish, and nothing was left to wait for");
}

/**
 * The process ended by a `--model` module's `process.exit` while it loaded: exit 1, saying so,
 * not 0 with no output (a fresh-eyes trial). (commander's own exits, `--help`, come later.) Only
 * synchronous writes are possible here; stderr to a file or pipe is synchronous on POSIX.
 */
process.on("exit", () => {
  const model = modelBeingLoaded();
  if (settled || ending || model === undefined) return;
  printFailure(
    new StateSyncError(
      "VALIDATION",
      `--model ${model} ended the process while it was loading (process.exit): the command did not run`,
    ),
  );
  process.exitCode = 1;
});

process.on("beforeExit", () => {
  if (settled) return;
  settled = true;
  printFailure(unfinished());
  void flushed(process.stderr).then(() => process.exit(1));
});

main(process.argv)
  .catch((error: unknown) => {
    printFailure(error);
    process.exitCode = 1;
  })
  .then(() => {
    settled = true;
    return Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  })
  .then(() => process.exit());
