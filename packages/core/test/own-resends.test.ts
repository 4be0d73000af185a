import { describe, expect, it } from "vitest";
import { OwnResends } from "../src/engine/own-resends.js";

/**
 * A replica's re-sending unconditional appends go one at a time, first come first served, and
 * its other appends hold back while any is under way (`own-resends.ts`; a trial: 20 commands of
 * one replica re-sending at once at 250 appends a second, most failed `UNKNOWN_OUTCOME`).
 */
const forever = { deadline: Infinity, signal: new AbortController().signal };
const settled = async (p: Promise<unknown>) =>
  Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), 20))]);

describe("OwnResends", () => {
  it("gives one re-send its turn at a time, in the order they came, until done or its next", async () => {
    const r = new OwnResends();
    const [a, b, c] = [{}, {}, {}];
    await r.enter(a, forever);
    const bTurn = r.enter(b, forever);
    const cTurn = r.enter(c, forever);
    expect(await settled(bTurn)).toBe(false);
    const aAgain = r.enter(a, forever); // a lost again: behind b and c
    expect(await settled(bTurn)).toBe(true);
    expect(await settled(cTurn)).toBe(false);
    r.done(b);
    expect(await settled(cTurn)).toBe(true);
    expect(await settled(aAgain)).toBe(false);
    r.done(c);
    expect(await settled(aAgain)).toBe(true);
    expect(r.active).toBe(true);
    r.done(a);
    expect(r.active).toBe(false);
  });

  it("a wait for a turn ends at its limits, and leaves the line", async () => {
    const r = new OwnResends();
    const [a, b, c] = [{}, {}, {}];
    await r.enter(a, forever);
    await r.enter(b, { deadline: Date.now() + 30, signal: forever.signal }); // goes ahead
    const cTurn = r.enter(c, forever);
    r.done(a);
    expect(await settled(cTurn)).toBe(true); // b left the line: c is next
    r.done(b);
    r.done(c);
    expect(r.active).toBe(false);
  });

  it("holds the replica's other appends back while one is under way, at most maxMs", async () => {
    const r = new OwnResends();
    const a = {};
    await r.enter(a, forever);
    const holding = { heldMs: 0 };
    const held = r.holdBack(holding, forever, 10_000);
    expect(await settled(held)).toBe(false);
    r.done(a);
    expect(await settled(held)).toBe(true);
    await r.enter(a, forever);
    await r.holdBack({ heldMs: 0 }, forever, 50); // never decided: the hold ends anyway
    expect(r.active).toBe(true);
    r.done(a);
  });
});
