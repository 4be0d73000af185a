import { canonicalJson } from "@statesync/core";
import type { ReplicaReport, StateReport } from "./ipc.js";
import { EXPECTATIONS } from "./script.js";
import { shortHash } from "./shared.js";

/** The summary of a demo run: the lines to print and whether every check passed. */
export interface Summary {
  readonly lines: string[];
  readonly ok: boolean;
}

function cell(report: StateReport | undefined): string {
  return report ? `rev ${String(report.revision).padEnd(4)} ${shortHash(report.hash)}` : "-";
}

/** Checks that every replica of one state is at the same revision with the same hash. */
function compare(
  label: string,
  reports: ReplicaReport[],
  pick: (report: ReplicaReport) => StateReport | undefined,
): { line: string; ok: boolean } {
  const states = reports.flatMap((report) => {
    const state = pick(report);
    return state ? [{ replica: report.replica, ...state }] : [];
  });
  const [first] = states;
  if (!first) return { line: `${label}: no replica reported`, ok: false };
  const differing = states.filter((s) => s.revision !== first.revision || s.hash !== first.hash);
  if (differing.length === 0) {
    return {
      line: `${label}: ${states.length} replicas identical: rev ${first.revision}, hash ${first.hash}`,
      ok: true,
    };
  }
  const detail = states.map((s) => `${s.replica} rev ${s.revision} ${shortHash(s.hash)}`);
  return { line: `${label}: MISMATCH between replicas: ${detail.join(", ")}`, ok: false };
}

/** Lists the expected flag values a replica does not serve. */
function wrongValues(report: ReplicaReport): string[] {
  if (!report.observed) return [];
  return EXPECTATIONS.flatMap(({ flag, user, expected }) => {
    const key = `${flag} for ${user}`;
    const seen = report.observed?.[key];
    if (seen !== undefined && canonicalJson(seen) === canonicalJson(expected)) return [];
    return [
      `${report.replica}: ${key} = ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`,
    ];
  });
}

/** Builds the final table and checks: identical replicas and the expected flag values. */
export function summarize(reports: ReplicaReport[]): Summary {
  const lines = [
    `${"replica".padEnd(11)} ${"feature-flags".padEnd(18)} ${"membership".padEnd(18)} flag values`,
  ];
  for (const report of reports) {
    const values = report.observed
      ? `${EXPECTATIONS.length - wrongValues(report).length}/${EXPECTATIONS.length} as expected`
      : "-";
    lines.push(
      `${report.replica.padEnd(11)} ${cell(report.flags).padEnd(18)} ${cell(report.membership).padEnd(18)} ${values}`,
    );
  }
  const flags = compare("feature-flags", reports, (report) => report.flags);
  const membership = compare("membership   ", reports, (report) => report.membership);
  const wrong = reports.flatMap(wrongValues);
  lines.push("", flags.line, membership.line);
  if (wrong.length === 0) {
    lines.push(`flag values  : every replica serves the ${EXPECTATIONS.length} expected values`);
  } else {
    lines.push("flag values  : UNEXPECTED", ...wrong.map((line) => `  ${line}`));
  }
  return { lines, ok: flags.ok && membership.ok && wrong.length === 0 };
}
