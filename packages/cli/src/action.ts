/**
 * Runs a command's action: validates nothing itself, but turns any failure into the one line
 * on stderr (`statesync: CODE: message`) and exit status 1.
 */
import { printFailure } from "./output.js";

/** Wraps an async action so that a failure prints one line and sets exit status 1. */
export function action<A extends unknown[]>(
  run: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await run(...args);
    } catch (error) {
      printFailure(error);
      process.exitCode = 1;
    }
  };
}
