#!/usr/bin/env node
/**
 * The `statesync` executable: `statesync --help`.
 *
 * The process exits as soon as its command is done (after stdout and stderr are flushed): a
 * nats.js ordered consumer whose stream was deleted under it can leave a retry timer behind
 * after its follower stopped and the connection closed, which kept `tail` alive for minutes.
 */
import { main } from "./program.js";
import { errorLine } from "./output.js";

/** Resolves once everything written to `stream` so far is handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

main(process.argv)
  .catch((error: unknown) => {
    process.stderr.write(`${errorLine(error)}\n`);
    process.exitCode = 1;
  })
  .then(() => Promise.all([flushed(process.stdout), flushed(process.stderr)]))
  .then(() => process.exit());
