import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, type Model } from "@statesync/core";
import { until } from "./fixtures.js";
import { v1, v2 } from "./version-models.js";

/**
 * A fresh-eyes trial (stop 33): a replica of a newer model version could not switch the log while
 * a writer of the older version kept appending (about 240 updates a second): each switch entry
 * lost its race, no intent was written, and `openSynchronizer` (upgrade on open) returned only
 * once the old writer stopped, 10-22 s later; `statesync migrate` too. The switch entry races like
 * any writer (issue 8's kind: no writer starves): after a few lost races it announces itself with
 * an intent, and the others hold back until it lands. Here the old writer's update lands before
 * every switch attempt, unless it holds back for an intent: before the fix, every attempt lost.
 */

const dec = new TextDecoder();
const kindOf = (data: Uint8Array) => (JSON.parse(dec.decode(data)) as { kind: string }).kind;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `beforeConditional` before each conditional append (the switch entry's). */
class Busy extends MemoryLog {
  beforeConditional: ((data: Uint8Array) => Promise<void>) | undefined;
  override async appendConditional(data: Uint8Array, expected: number, id: string, o?: object) {
    await this.beforeConditional?.(data);
    return super.appendConditional(data, expected, id, o);
  }
}

/** A replica on a handle of `log` (its own connection, as it were), or on `log` itself. */
function open<S>(log: MemoryLog, model: Model<S, any>, extra: Record<string, unknown> = {}) {
  return createSynchronizer({ log: log.handle(), model, compaction: false, ...extra });
}

async function kinds(log: MemoryLog): Promise<string[]> {
  const out: string[] = [];
  for await (const e of log.read(1, Infinity)) out.push(kindOf(e.data));
  return out;
}

describe("a switch to a newer model version while a writer of the older one keeps appending", () => {
  it("is written: it announces itself, the old writer holds back, then stops MODEL_UPGRADED", async () => {
    const log = new Busy();
    const old = await open(log, v1, { clientId: "old" });
    await old.update("add", { id: "x" }); // 2
    // On `log` itself: its conditional appends run the hook.
    const next = await createSynchronizer({
      log,
      model: v2,
      clientId: "new",
      compaction: false,
      upgrade: "manual",
    });
    expect(next.upgradePending).toBe(true);
    let races = 0;
    let intentSeen = false;
    const oldUpdates: Promise<unknown>[] = [];
    log.beforeConditional = async (data) => {
      if (kindOf(data) !== "switch") return;
      races += 1;
      // The old writer's update lands first, unless it holds back for the new one's intent.
      const other = old.update("add", { id: `o${races}` }).catch((e: unknown) => e);
      oldUpdates.push(other);
      for (;;) {
        const done = await Promise.race([other.then(() => true), sleep(5).then(() => false)]);
        if (done) return;
        intentSeen ||= (await kinds(log)).includes("intent");
        if (intentSeen) return;
      }
    };
    const switched = await next.upgrade().then(
      (revision) => revision,
      (e: Error) => e,
    );
    log.beforeConditional = undefined;
    expect(switched).toMatchObject({ revision: expect.any(Number) }); // before: RETRY_LIMIT
    expect(races).toBeGreaterThanOrEqual(3); // it lost races before it announced itself
    expect(intentSeen).toBe(true);
    expect(next.upgradePending).toBe(false);
    const all = await kinds(log);
    expect(all.filter((k) => k === "switch")).toHaveLength(1);
    // The held update of the old writer meets the switch: it stops, as docs/versions.md says.
    const outcomes = await Promise.all(oldUpdates);
    expect(outcomes.at(-1)).toMatchObject({ code: "MODEL_UPGRADED" });
    await until(() => old.status === "stalled");
    expect(old.stallReason?.code).toBe("MODEL_UPGRADED");
    await next.synced();
    expect(next.state.ids.slice(0, 1)).toEqual(["x"]);
    expect(next.state.tags).toEqual([]);
    await Promise.all([old.close(), next.close()]);
  });
});
