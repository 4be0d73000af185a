import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, stateHash, type StateSyncError } from "@statesync/browser";
import { ledger, type HostileCase } from "../../node/test/fixtures/hostile/ledger-model.js";
import manifest from "../../node/test/fixtures/hostile/manifest.json" with { type: "json" };

/**
 * The hostile-input corpus of the Node fault tests (packages/node/test/fixtures/hostile), run by
 * replicas inside Chromium: the same raw bytes must end the same way as in Node (the manifest's
 * expected outcome), whatever the browser's JSON, UTF-8 and stack behave like. The log here is a
 * MemoryLog holding exactly the bytes nats-server stores; the Node test feeds them through a real
 * server.
 */

const bytes = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const INITIAL = { count: 0, ops: [], notes: [] };

async function replica(log: MemoryLog) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log,
    model: ledger,
    waitFor: "restored",
    compaction: false,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

async function settled(r: { revision: number; status: string }): Promise<void> {
  for (let i = 0; i < 500 && r.revision < 3 && r.status !== "stalled"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("hostile corpus in Chromium", () => {
  const cases = (manifest as { cases: HostileCase[]; marker: string }).cases;
  it("has the corpus", () => expect(cases.length).toBeGreaterThanOrEqual(40));

  for (const c of cases) {
    it(`${c.name}: ${c.expected}`, async () => {
      const log = new MemoryLog();
      const live = await replica(log);
      await live.synced();
      expect(live.revision).toBe(1);
      expect(log.injectRaw(bytes(c.payload), `hostile-${c.name}`)).toBe(2);
      log.injectRaw(bytes(manifest.marker), "marker");
      await settled(live);
      const late = await replica(log);
      await settled(late);
      for (const r of [live, late]) {
        const at2 = r.errors.filter((e) => e.details.revision === 2).map((e) => e.code);
        if (c.expected.startsWith("stall:")) {
          expect(r.status).toBe("stalled");
          expect(r.stallReason?.code).toBe(c.expected.slice("stall:".length));
          expect(r.revision).toBe(1);
          expect(r.state).toEqual(INITIAL);
        } else if (c.expected === "skipped") {
          expect(r.revision).toBe(3);
          expect(at2).toEqual([c.reported ?? "CORRUPT_ENTRY"]);
          expect(r.state).toEqual({ ...INITIAL, notes: ["after"] });
        } else {
          expect(c.expected).toBe("applied");
          expect(r.revision).toBe(3);
          expect(at2).toEqual(c.reported ? [c.reported] : []);
          if (c.state !== undefined) expect(r.state).toEqual(c.state);
          if (c.stateHash !== undefined) expect(stateHash(r.state)).toBe(c.stateHash);
        }
      }
      expect(stateHash(late.state)).toBe(stateHash(live.state));
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      await Promise.all([live.close(), late.close()]);
    });
  }
});
