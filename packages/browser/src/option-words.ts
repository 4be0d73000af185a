/**
 * The words of this package's option schemas that take nothing of `@statesync/core` at run time,
 * so that the React entry point (which bundles no core code of its own) can use them too.
 */
import { z } from "zod/v4";

/** A function, in words (zod's own is a bare "Invalid input"); `message` says which. */
export const functionSchema = (message = "expected a function") =>
  z.custom<(...args: never[]) => unknown>((v) => typeof v === "function", message);

/** A function, in words (zod's own is a bare "Invalid input"). */
export const fnSchema = functionSchema();

/** What zod says of options that are no object, naming what the class takes. */
export const notAnObject = (shape: string) => (issue: { code: string }) =>
  issue.code === "invalid_type" ? `options must be ${shape}, or left out` : undefined;
