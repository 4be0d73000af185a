/**
 * One more check of a chaos run, beside the history checker's: the revision an update resolved
 * with is where it stands. Every state any replica showed at a revision at or after it holds the
 * update; every state shown at an earlier revision does not.
 */
import type { Observation, OpRecord } from "../support/checker.js";

/**
 * Violations of "an update resolved with revision R is in every observed state at R or later and
 * in none before", given the final applied order `applied` (the reference replica's `ops`).
 */
export function checkResolvedRevisions(
  ops: readonly OpRecord[],
  applied: readonly string[],
  observations: ReadonlyMap<string, readonly Observation[]>,
): string[] {
  const position = new Map(applied.map((id, i) => [id, i]));
  const resolved = ops.flatMap((op) =>
    op.outcome?.status === "ok" && position.has(op.opId)
      ? [{ opId: op.opId, revision: op.outcome.revision, index: position.get(op.opId)! }]
      : [],
  );
  const violations: string[] = [];
  for (const [client, list] of observations) {
    for (const o of list) {
      for (const r of resolved) {
        const holds = r.index < o.opsLength;
        if (r.revision <= o.revision && !holds) {
          violations.push(
            `${r.opId} resolved at revision ${r.revision} but ${client}'s state at ${o.revision} lacks it`,
          );
        } else if (r.revision > o.revision && holds) {
          violations.push(
            `${r.opId} resolved at revision ${r.revision} but ${client}'s state at ${o.revision} holds it`,
          );
        }
        if (violations.length >= 10) return violations;
      }
    }
  }
  return violations;
}
