import type { LogEntry } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { WentBackGuard } from "../src/tail-guard.js";

/**
 * Found by a fresh-eyes trial (stop 25): a `tail` held up (SIGSTOP) while 2,000 entries were
 * written and compacted away resumed at the snapshot entry and skipped the removed entries
 * without a word. The guard now reports the revisions it never saw, in a log of one state.
 */
describe("WentBackGuard: entries removed before tail read them", () => {
  const entry = (revision: number): LogEntry => ({
    revision,
    data: new Uint8Array(),
    messageId: `m-${revision}`,
  });
  const log = (contiguous: boolean) => ({
    contiguous,
    info: () => Promise.reject(new Error("not asked")),
    entryAt: (revision: number) => Promise.resolve(entry(revision)),
  });

  it("says which revisions were skipped, and prints the entries it got", async () => {
    const printed: number[] = [];
    const skipped: Array<[number, number]> = [];
    const guard = new WentBackGuard(
      log(true),
      (e) => printed.push(e.revision),
      () => undefined,
      (a, b) => skipped.push([a, b]),
    );
    await guard.start(2); // tail started with the log at revision 2
    for (const r of [3, 4, 9, 10, 12]) guard.entry(entry(r));
    expect(printed).toEqual([3, 4, 9, 10, 12]);
    expect(skipped).toEqual([
      [5, 8],
      [11, 11],
    ]);
  });

  it("says nothing in a shared stream, where revisions skip other states' entries", async () => {
    const skipped: number[] = [];
    const guard = new WentBackGuard(
      log(false),
      () => undefined,
      () => undefined,
      (a) => skipped.push(a),
    );
    await guard.start(2);
    for (const r of [3, 7, 20]) guard.entry(entry(r));
    expect(skipped).toEqual([]);
  });
});
