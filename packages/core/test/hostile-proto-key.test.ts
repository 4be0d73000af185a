import { describe, expect, it } from "vitest";
import { MemoryLog, stateHash } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * Regression test (found by the hostile-input corpus of the fault tests): a patch *value* with a
 * `"__proto__"` key. JSON.parse makes it an own property, but Immer copies patch values with
 * `[[Set]]`, which replaced the copy's prototype: every replica that replayed the entry read
 * `state.extra.polluted === "yes"` through the prototype, `stateHash` threw, and a replica that
 * started from a snapshot (JSON, which drops the prototype) read `undefined`: divergence.
 * Now an entry with a `__proto__` key anywhere is malformed and skipped by every replica alike.
 */
const ts = 1_700_000_000_000;
const update = (base: number, value: string) =>
  `{"v":1,"kind":"update","ts":${ts},"client":"evil","base":${base},"seed":1,"patches":[{"op":"add","path":["extra"],"value":${value}}]}`;

describe("a __proto__ key in an entry", () => {
  for (const [name, value] of [
    ["literal", `{"__proto__":{"polluted":"yes"},"a":1}`],
    ["escaped", `{"\\u005f_proto__":{"polluted":"yes"},"a":1}`],
    ["nested in an array", `[1,{"b":{"__proto__":{"polluted":"yes"}}}]`],
  ] as const) {
    it(`is skipped by every replica (${name})`, async () => {
      const log = new MemoryLog();
      const live = await open(log);
      const revision = log.injectRaw(update(1, value));
      await live.update("increment", { by: 1 });
      const late = await open(log);
      for (const r of [live, late]) {
        expect(r.revision).toBe(revision + 1);
        expect("extra" in (r.state as object)).toBe(false);
        expect(r.errors.map((e) => [e.code, e.details.revision])).toContainEqual([
          "CORRUPT_ENTRY",
          revision,
        ]);
      }
      expect(stateHash(live.state)).toBe(stateHash(late.state));
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      await Promise.all([live.close(), late.close()]);
    });
  }

  it("a __proto__ string elsewhere (a value, not a key) is fine", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    await a.update("push", { item: "__proto__" });
    expect(a.state.items).toEqual(["__proto__@1"]);
    await a.close();
  });
});
