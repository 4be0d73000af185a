import { describe, expect, it } from "vitest";
import { RevisionWaiters, type Waiter } from "../src/engine/revision-waiters.js";

function waiter(revision: number, log: string[], name: string): Waiter {
  return { revision, resolve: () => log.push(name), reject: () => log.push(`!${name}`) };
}

/**
 * The replica's waiters are kept in revision order (an applied entry visits only those it
 * reaches), and those settled together are settled in the order they started waiting, as the
 * set the replica scanned before settled them.
 */
describe("RevisionWaiters", () => {
  it("takes only the waiters a revision reaches, in the order they started waiting", () => {
    const log: string[] = [];
    const w = new RevisionWaiters();
    w.add(waiter(5, log, "a5"));
    w.add(waiter(3, log, "b3"));
    w.add(waiter(9, log, "c9"));
    w.add(waiter(3, log, "d3"));
    w.add(waiter(4, log, "e4"));
    expect(w.takeUpTo(2)).toEqual([]);
    for (const x of w.takeUpTo(5)) x.resolve();
    expect(log).toEqual(["a5", "b3", "d3", "e4"]);
    for (const x of w.takeUpTo(5)) x.resolve();
    expect(log).toHaveLength(4);
    for (const x of w.takeAll()) x.reject(new Error());
    expect(log).toEqual(["a5", "b3", "d3", "e4", "!c9"]);
    expect(w.takeAll()).toEqual([]);
  });

  it("forgets deleted waiters, also when more were deleted than are left", () => {
    const log: string[] = [];
    const w = new RevisionWaiters();
    const gone = Array.from({ length: 200 }, (_, i) => waiter(1_000 + i, log, `g${i}`));
    for (const g of gone) w.add(g);
    w.add(waiter(1_100, log, "kept"));
    for (const g of gone) w.delete(g);
    w.delete(gone[0]!); // twice: no effect
    expect(w.takeUpTo(2_000).map((x) => x.revision)).toEqual([1_100]);
    w.add(waiter(7, log, "late"));
    expect(w.takeAll().map((x) => x.revision)).toEqual([7]);
  });
});
