import { MemoryLog } from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { StatusHub } from "../src/engine/status.js";
import { codeOf, open } from "./fixtures.js";

/**
 * Hundreds of operations of one replica wait at once (256 unconditional commands in flight,
 * each waiting until the replica consumed it). They used to wait through a listener each on the
 * replica's internal close signal, and Node printed "MaxListenersExceededWarning: Possible
 * EventTarget memory leak detected. 11 abort listeners added to [AbortSignal]" into the app's
 * output (found running the unconditional benchmark's loop).
 */
describe("many operations waiting at once", () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  afterEach(() => {
    process.off("warning", onWarning);
    warnings.length = 0;
  });

  it("300 unconditional commands in flight commit and make Node print no warning", async () => {
    process.on("warning", onWarning);
    const sync = await open(new MemoryLog(), { compaction: false });
    const results = await Promise.all(
      Array.from({ length: 300 }, () => sync.updateUnconditionally("increment", { by: 1 })),
    );
    expect(sync.state.count).toBe(300);
    // Commands in flight together share entries (docs/format.md, "Format 4").
    expect(new Set(results.map((r) => r.revision)).size).toBe(sync.stats.appends);
    await new Promise((r) => setTimeout(r, 10)); // warnings are emitted on a later tick
    expect(warnings).toEqual([]);
    await sync.close();
  });

  it("close() still ends every wait of untilClosed with CLOSED, and a settled wait keeps its outcome", async () => {
    process.on("warning", onWarning);
    const hub = new StatusHub();
    const settled = hub.untilClosed(Promise.resolve(7));
    const waits = Array.from({ length: 50 }, () => codeOf(hub.untilClosed(new Promise(() => {}))));
    expect(await settled).toBe(7);
    hub.close();
    expect(new Set(await Promise.all(waits))).toEqual(new Set(["CLOSED"]));
    expect(await codeOf(hub.untilClosed(Promise.resolve(1)))).toBe("CLOSED");
    await new Promise((r) => setTimeout(r, 10));
    expect(warnings).toEqual([]);
  });
});
