#!/usr/bin/env node
/** The `statesync` executable: `statesync --help`. */
import { main } from "./program.js";
import { errorLine } from "./output.js";

main(process.argv).catch((error: unknown) => {
  process.stderr.write(`${errorLine(error)}\n`);
  process.exitCode = 1;
});
