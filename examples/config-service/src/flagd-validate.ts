import type { Logger } from "@openfeature/core";
import { MemoryStorage } from "@openfeature/flagd-core";

const silent: Logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} };

/** Most schema complaints listed in one problem (flagd's `anyOf` reports one per flag type). */
const MAX_COMPLAINTS = 6;

interface SchemaError {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/**
 * Why flagd rejects the flag definition document `text`, or undefined when it accepts it.
 *
 * Uses `@openfeature/flagd-core`'s strict parse (`MemoryStorage.setConfigurations(text, true)`),
 * the one flagd's in-process providers run: JSON parsing, `$evaluators` / `$ref` expansion,
 * validation against flagd's flag and targeting JSON schemas, and the structural checks (a
 * `defaultVariant` that is not a variant, an invalid `state`). Targeting that validates but does
 * not compile is accepted, as flagd does (such a flag evaluates with reason `ERROR`).
 */
export function flagdProblem(text: string): string | undefined {
  try {
    new MemoryStorage(silent).setConfigurations(text, true);
    return undefined;
  } catch (error) {
    return describeParseError(error);
  }
}

function describeParseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const json = message.indexOf("[");
  if (json >= 0) {
    try {
      const errors = JSON.parse(message.slice(json)) as SchemaError[];
      const lines = [...new Set(errors.map(complaint))];
      const shown = lines.slice(0, MAX_COMPLAINTS).join("; ");
      const more =
        lines.length > MAX_COMPLAINTS ? ` (and ${lines.length - MAX_COMPLAINTS} more)` : "";
      return `flagd rejects the document: ${shown}${more}`;
    } catch {
      // not flagd's schema error list: fall through to the message itself
    }
  }
  return `flagd rejects the document: ${cause?.message ?? message}`;
}

function complaint(error: SchemaError): string {
  const at = error.instancePath ? error.instancePath : "the document";
  const extra = error.params?.["additionalProperty"] ?? error.params?.["missingProperty"];
  return `${at} ${error.message ?? "is invalid"}${typeof extra === "string" ? ` (${extra})` : ""}`;
}
