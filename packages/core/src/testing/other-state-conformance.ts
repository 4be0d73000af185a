import { expect, it } from "vitest";
import type { RevisionedLog } from "../log.js";
import type { RevisionedLogHarness } from "./revisioned-log-conformance.js";

const bytes = (s: string) => new TextEncoder().encode(s);

/**
 * The cases of `RevisionedLog.otherStateAt` in {@link runRevisionedLogConformance}, for a log
 * that has the method (skipped, passing, for one without: the engine takes such a log as one
 * that cannot tell). `withLog` runs a case on a fresh log and closes it.
 */
export function otherStateAtCases(
  withLog: (fn: (h: RevisionedLogHarness) => Promise<void>) => Promise<void>,
): void {
  it("otherStateAt: false at this state's own revisions and where the log holds nothing", () =>
    withLog(async ({ log }) => {
      if (!log.otherStateAt) return;
      const a = await log.appendUnconditional(bytes("a"), "os-a");
      const b = await log.appendConditional(bytes("b"), a.revision, "os-b");
      expect(await log.otherStateAt(a.revision)).toBe(false);
      expect(await log.otherStateAt(b.revision)).toBe(false);
      expect(await log.otherStateAt(b.revision + 1_000)).toBe(false);
    }));

  it("otherStateAt: true at a sibling state's entry on a shared stream, else false", () =>
    withLog(async (h) => {
      if (!h.log.otherStateAt || !h.openSibling) return;
      const sibling: RevisionedLog = await h.openSibling();
      try {
        const mine = await h.log.appendUnconditional(bytes("m"), "os-m");
        const theirs = await sibling.appendUnconditional(bytes("s"), "os-s");
        const after = await h.log.appendUnconditional(bytes("n"), "os-n");
        // On a shared stream the sibling's entry takes a revision of this log's sequence; in
        // another stream, this log holds no other state's entry at all.
        const sees = h.seesSiblingEntries === true;
        if (sees) expect(theirs.revision).not.toBe(mine.revision);
        expect(await h.log.otherStateAt(theirs.revision)).toBe(sees);
        expect(await h.log.otherStateAt(mine.revision)).toBe(false);
        expect(await h.log.otherStateAt(after.revision)).toBe(false);
      } finally {
        await sibling.close();
      }
    }));
}
