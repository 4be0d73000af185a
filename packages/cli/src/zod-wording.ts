/**
 * Schema failures of operator-supplied files in operators' words: zod's own messages
 * (`Invalid input: expected "statesync-backup"`) leaked into the CLI's error lines (a fresh-eyes
 * trial). Parse with `reportInput: true` so that the value found can be named.
 */
import type { z } from "zod";

/** `a string`, `an array`, `null`: what a JSON value is, for a message. */
export function kindOfValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** `value` as a message quotes it: JSON, cut at 60 characters. */
function quoted(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** zod's expected type names, worded. */
const EXPECTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  array: "an array",
  object: "an object",
  null: "null",
};

/** What is wrong at the issue's path (without the path): `is missing`, `is 9, not 1`, ... */
export function issueText(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case "invalid_type": {
      if (input === undefined) return "is missing";
      const want = EXPECTED[issue.expected] ?? issue.expected;
      return `must be ${want}, not ${kindOfValue(input)}`;
    }
    case "invalid_value": {
      const allowed = issue.values.map((v) => quoted(v)).join(" or ");
      return input === undefined ? "is missing" : `is ${quoted(input)}, not ${allowed}`;
    }
    case "unrecognized_keys":
      return `has unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}`;
    default:
      return issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  }
}
