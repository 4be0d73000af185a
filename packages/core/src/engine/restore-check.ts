import { MAX_STATE_DEPTH } from "../entry-limits.js";
import { hasOwnProtoKey } from "../entry.js";
import { findNonJson } from "../json.js";
import type { Model } from "../model.js";
import { nestedDeeperThan } from "../nesting.js";
import type { SnapshotRecord } from "../snapshot-store.js";
import { safeParse } from "../schema-parse.js";

/**
 * Why a loaded local snapshot cannot be used (a damaged or hand-edited record whose checksum was
 * recomputed), or undefined. `model` is the model version the record names. Refused: a record at
 * revision 0 (no replica saves one: it holds no entry of the log), a state nested deeper than
 * `MAX_STATE_DEPTH`, one that fails the schema or is not JSON, and one with an own `__proto__`
 * key (which every entry refuses). The depth comes first, iteratively: a schema of recursive
 * shape (and every later save's `JSON.stringify`) would overflow the stack on a state nested
 * thousands of levels deep. A state the log could have produced cannot be told from a genuine
 * one (docs/guarantees.md, "Known limits").
 */
export function restoredRecordProblem(
  record: SnapshotRecord,
  model: Pick<Model<unknown, never>, "state">,
): string | undefined {
  if (record.revision === 0) {
    return "it is at revision 0, where no replica saves one (it holds no entry of the log)";
  }
  if (nestedDeeperThan(record.state, MAX_STATE_DEPTH)) {
    return `its state nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels, more than the log's entries may hold`;
  }
  if (!safeParse(model.state, record.state).success) return "its state fails the model's schema";
  if (findNonJson(record.state) !== undefined) return "its state is not JSON";
  if (hasOwnProtoKey(record.state)) {
    return "its state has an own __proto__ key, which no entry may write";
  }
  return undefined;
}

/**
 * True when two log identities name different logs, not two incarnations of one: JetStream's
 * are `jetstream:<stream>:<subject>@<created>` (log-reader.ts), and differ before the `@` for
 * another stream or key (a trial read "the log was recreated" for a snapshotKey that two
 * streams shared). Identities of another shape are not told apart.
 */
export function otherLog(a: string, b: string): boolean {
  const at = (id: string) => id.lastIndexOf("@");
  return at(a) > 0 && at(b) > 0 && a.slice(0, at(a)) !== b.slice(0, at(b));
}

/**
 * Why a snapshot written for the log `recorded` does not belong to the log `current` (shown as
 * `shown`), when {@link otherLog} tells them apart; undefined when it does not.
 */
export function anotherLog(recorded: string, current: string, shown = current): string | undefined {
  return otherLog(recorded, current)
    ? `it was written for another log (${recorded}, not ${shown}): do two states share this snapshotKey?`
    : undefined;
}
