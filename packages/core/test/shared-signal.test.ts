import { getEventListeners } from "node:events";
import { MemoryLog } from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { whenAborted } from "../src/abort-watch.js";
import { codeOf, open } from "./fixtures.js";
import { openQueued } from "./pending/fixtures.js";

/**
 * One `AbortSignal` handed to many operations at once (a component's unmount, a server's
 * shutdown). Each operation used to add its own `abort` listener to it, and with more than 10
 * Node printed "MaxListenersExceededWarning: Possible EventTarget memory leak detected" into the
 * app's output (a fresh-eyes trial); a queued update's listener stayed on the signal after the
 * update committed. Now the operations of one signal share one listener, gone once none waits.
 */
describe("one AbortSignal shared by many operations", () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on("warning", onWarning);
  afterEach(() => {
    warnings.length = 0;
  });
  const settle = () => new Promise((r) => setTimeout(r, 10)); // warnings come on a later tick

  it("300 updates, conditional and unconditional, commit; no warning; no listener left", async () => {
    const sync = await open(new MemoryLog(), { compaction: false });
    const { signal } = new AbortController();
    await Promise.all(
      Array.from({ length: 150 }, () => [
        sync.update("increment", { by: 1 }, { signal }),
        sync.updateUnconditionally("increment", { by: 1 }, { signal }),
      ]).flat(),
    );
    expect(sync.state.count).toBe(300);
    await settle();
    expect(warnings).toEqual([]);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    await sync.close();
  });

  it("50 waits end ABORTED together when the shared signal aborts", async () => {
    const sync = await open(new MemoryLog(), { compaction: false });
    const controller = new AbortController();
    const waits = Array.from({ length: 50 }, () =>
      codeOf(sync.waitFor(1_000, { signal: controller.signal })),
    );
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    expect(new Set(await Promise.all(waits))).toEqual(new Set(["ABORTED"]));
    await settle();
    expect(warnings).toEqual([]);
    await sync.close();
  });

  it("a queued update stops listening once it is committed", async () => {
    const sync = await openQueued(new MemoryLog());
    const { signal } = new AbortController();
    await Promise.all(Array.from({ length: 20 }, () => sync.update("bump", {}, { signal })));
    expect(sync.state.n).toBe(20);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    await settle();
    expect(warnings).toEqual([]);
    await sync.close();
  });

  it("whenAborted: each call is called once, stopped calls are not, the listener goes with the last", () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const cb = () => calls.push("x");
    const stopA = whenAborted(controller.signal, cb);
    whenAborted(controller.signal, cb); // the same function twice waits twice
    const stopC = whenAborted(controller.signal, () => calls.push("c"));
    stopC();
    stopA();
    stopA(); // twice is harmless
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    expect(calls).toEqual(["x"]);
    const other = new AbortController();
    whenAborted(other.signal, cb)();
    expect(getEventListeners(other.signal, "abort")).toHaveLength(0);
  });
});
