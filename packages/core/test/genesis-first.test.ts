import { describe, expect, it } from "vitest";
import { MemoryLog } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * Regression test (found by the three-node cluster fault test: on a freshly created R3 stream
 * the genesis append timed out): a replica that could not write the genesis entry opened
 * `offline` at revision 0, and an update made right then was stored as the log's FIRST entry,
 * with no genesis before it. No replica could ever open that log again (TRUNCATED). Now nothing
 * is appended before the replica stands on the log's first entry: the update waits for the
 * genesis to be written (or fails UNAVAILABLE if the log stays unreachable).
 */

describe("the genesis entry comes first", () => {
  for (const kind of ["conditional", "unconditional"] as const) {
    it(`an ${kind} update right after a failed genesis append waits for the genesis`, async () => {
      const log = new MemoryLog();
      log.failNextAppends(1); // the genesis append: outcome unknown, nothing stored
      const a = await open(log);
      expect(a.status).toBe("offline");
      expect(a.revision).toBe(0);
      const r =
        kind === "conditional"
          ? await a.update("increment", { by: 1 })
          : await a.updateUnconditionally("increment", { by: 1 });
      expect(r.revision).toBe(2);
      expect((await a.history())[0]).toMatchObject({ revision: 1, kind: "genesis" });
      await a.waitFor(2);
      expect(a.state.count).toBe(1);
      const late = await open(log);
      expect(late.state.count).toBe(1);
      await Promise.all([a.close(), late.close()]);
    });
  }
});
