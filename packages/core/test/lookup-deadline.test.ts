import { describe, expect, it } from "vitest";
import type { StateSyncError } from "../src/errors.js";
import type { LogInfo } from "../src/log.js";
// The engine's own classes throughout (src, not dist), so that `instanceof StateSyncError` holds.
import { MemoryLog } from "../src/memory-log.js";
import { appenderOn, incCommand } from "./engine-fixtures.js";
import { late } from "./fixtures.js";

/** A log whose `info` stops answering once `hang` is set (a look-up that never ends). */
class HangingInfo extends MemoryLog {
  hang = false;
  override info(): Promise<LogInfo> {
    return this.hang ? new Promise<LogInfo>(() => undefined) : super.info();
  }
}

/**
 * A trial (stop 28): an unconditional update whose first send was lost settled 102.7 s into its
 * 30 s `outcomeTimeoutMs`: the look-ups before each re-send were bounded only by the caller's
 * signal, and scanned a loaded log again and again. Outcomes only: the update settles
 * `UNKNOWN_OUTCOME` (its first send may be stored) long before the race's bound.
 */
describe("the look-up of a lost acknowledgement ends at the update's deadline", () => {
  it("settles UNKNOWN_OUTCOME while the look-up still waits", async () => {
    const log = new HangingInfo();
    const { a } = appenderOn(log);
    log.loseNextAcks(1); // stored, but the answer is lost: the look-up must tell
    const prepared = await a.prepare(incCommand(), "the command");
    log.hang = true;
    const append = a.appendUnconditional(prepared, { timeoutMs: 300 });
    const first = await Promise.race([
      append.then(
        () => "stored",
        (e: StateSyncError) => e.code,
      ),
      late(5_000),
    ]);
    expect(first).toBe("UNKNOWN_OUTCOME");
    await expect(append).rejects.toThrow(/outcomeTimeoutMs|within 300 ms/);
  });
});

/** A log where another writer's entry lands right before every conditional append. */
class Contended extends MemoryLog {
  override appendConditional(data: Uint8Array, expected: number, id: string, o?: object) {
    this.injectRaw(`other-${this.size}`);
    return super.appendConditional(data, expected, id, o);
  }
}

describe("an unconditional re-send that keeps conflicting", () => {
  it("says so at its deadline, not that the log did not answer", async () => {
    const log = new Contended();
    const { a } = appenderOn(log);
    log.failNextAppends(1); // no answer: as far as the appender knows it may have landed
    const prepared = await a.prepare(incCommand(), "the command");
    const error = await a.appendUnconditional(prepared, { timeoutMs: 300 }).then(
      () => undefined,
      (e: StateSyncError) => e,
    );
    expect(error?.code).toBe("UNKNOWN_OUTCOME");
    expect(error?.message).toMatch(/every re-send .* conflicted with other writers' entries/);
    expect(error?.message).not.toMatch(/no answer/);
  });
});

/** {@link Contended} until two re-sends conflicted; then its look-ups get no answer. */
class ContendedThenSilent extends HangingInfo {
  override appendConditional(data: Uint8Array, expected: number, id: string, o?: object) {
    this.injectRaw(`other-${this.size}`);
    this.hang ||= this.size > 3;
    return super.appendConditional(data, expected, id, o);
  }
}

describe("re-sends that conflicted, then a look-up that got no answer", () => {
  it("says both, not only what the last attempt met (a trial's LOW finding)", async () => {
    const log = new ContendedThenSilent();
    const { a } = appenderOn(log);
    log.failNextAppends(1);
    const prepared = await a.prepare(incCommand(), "the command");
    const error = await a.appendUnconditional(prepared, { timeoutMs: 300 }).then(
      () => undefined,
      (e: StateSyncError) => e,
    );
    expect(error?.code).toBe("UNKNOWN_OUTCOME");
    expect(error?.message).toMatch(/every re-send .* conflicted with other writers. entries/);
    expect(error?.message).toMatch(
      /, and then the deadline came before its next look-up finished$/,
    );
  });
});
