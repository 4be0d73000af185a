import { describe, expect, it } from "vitest";
import { TouchRecorder } from "../src/engine/touch-recorder.js";

/**
 * A fresh-eyes trial: each `push` onto an array of more than 4,096 elements read every key of the
 * array (the recorder's scan for a shrink ran on every write of `length`, a growth too): 200
 * updates of a 13,000-element array took 3.6 s, 73% of it in that scan (0.34 s without it). The
 * scan is for shrinks that remove more indices than it reads. Outcome: how often the array's
 * keys are read, counted by a proxy around it, and the touches noted.
 */
function countedArray(length: number): { array: number[]; keyReads: () => number } {
  let reads = 0;
  const array = new Proxy(
    Array.from({ length }, (_, i) => i),
    {
      ownKeys: (t) => {
        reads += 1;
        return Reflect.ownKeys(t);
      },
    },
  );
  return { array, keyReads: () => reads };
}

/** The indices of the removals `recorder` noted since the last call, in order. */
function removedIndices(recorder: TouchRecorder): unknown[] {
  return recorder
    .take()
    .filter((t) => t.op === "remove")
    .map((t) => t.path[1]);
}

describe("the touch recorder on a long array", () => {
  it("a push, a pop and a small shrink read no keys", () => {
    const { array, keyReads } = countedArray(10_000);
    const recorder = new TouchRecorder();
    const view = recorder.wrap(array, ["items"]);
    view.push(-1);
    view.pop();
    view.length = 9_990;
    expect(keyReads()).toBe(0);
    const removed = removedIndices(recorder);
    // pop: its delete, then its length
    expect(removed).toEqual([10_000, 10_000, ...Array.from({ length: 10 }, (_, i) => 9_990 + i)]);
  });

  it("a shrink by more than 4,096 indices reads the keys once and removes only those held", () => {
    const { array, keyReads } = countedArray(10_000);
    delete array[5]; // a hole: not held, so not removed
    const recorder = new TouchRecorder();
    const view = recorder.wrap(array, ["items"]);
    view.length = 2;
    expect(keyReads()).toBe(1);
    const removed = removedIndices(recorder);
    expect(removed).toHaveLength(9_997);
    expect(removed).not.toContain(5);
    expect(removed).toContain(2);
  });
});
