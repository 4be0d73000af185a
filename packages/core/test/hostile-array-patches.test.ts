import { describe, expect, it } from "vitest";
import { MemoryLog, stateHash } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * Regression test (fresh-eyes trial): one hostile entry of about 150 bytes, a patch writing an
 * array's `length` (or an index far past its end), made Immer give every replica an array of
 * 4,294,967,295 empty slots: the freeze walk never ended, so every live replica's event loop and
 * every fresh open hung for good. Such a patch is now refused where it is applied: the entry is a
 * no-op (`COMMAND_FAILED`) on every replica alike, and the replicas go on.
 */
const ts = 1_700_000_000_000;
const update = (base: number, patch: string) =>
  `{"v":1,"kind":"update","ts":${ts},"client":"evil","base":${base},"seed":1,"patches":[${patch}]}`;

describe("a patch that would make an array huge or sparse", () => {
  for (const [name, patch] of [
    ["length", `{"op":"replace","path":["items","length"],"value":4294967295}`],
    ["length as a number key", `{"op":"add","path":["items","length"],"value":4294967295}`],
    ["replace far past the end", `{"op":"replace","path":["items",1000000000],"value":"x"}`],
    ["replace just past the end", `{"op":"replace","path":["items",1],"value":"x"}`],
    ["add past the end", `{"op":"add","path":["items",2],"value":"x"}`],
    ["add past the end, as text", `{"op":"add","path":["items","2"],"value":"x"}`],
    ["remove past the end", `{"op":"remove","path":["items",1]}`],
    ["a key that is no index", `{"op":"add","path":["items","x"],"value":"x"}`],
  ] as const) {
    it(`is a no-op on every replica (${name})`, async () => {
      const log = new MemoryLog();
      const live = await open(log);
      await live.update("push", { item: "a" }); // items: ["a@1"] at revision 2
      const revision = log.injectRaw(update(2, patch));
      await live.update("push", { item: "b" });
      const late = await open(log);
      for (const r of [live, late]) {
        expect(r.revision).toBe(revision + 1);
        expect(r.state.items).toEqual(["a@1", `b@${revision}`]);
        expect(r.errors.map((e) => [e.code, e.details.revision])).toContainEqual([
          "COMMAND_FAILED",
          revision,
        ]);
      }
      expect(stateHash(live.state)).toBe(stateHash(late.state));
      await Promise.all([live.close(), late.close()]);
    });
  }

  it("patches Immer writes for arrays still apply: add at the end, add by -, replace, remove", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    await a.update("push", { item: "a" });
    const base = a.revision;
    const revision = log.injectRaw(
      update(
        base,
        [
          `{"op":"add","path":["items",1],"value":"b"}`,
          `{"op":"add","path":["items","-"],"value":"c"}`,
          `{"op":"replace","path":["items",0],"value":"z"}`,
          `{"op":"add","path":["items",0],"value":"y"}`,
          `{"op":"remove","path":["items",3]}`,
        ].join(","),
      ),
    );
    await a.fetchUpdates();
    const late = await open(log);
    for (const r of [a, late]) {
      expect(r.revision).toBe(revision);
      expect(r.state.items).toEqual(["y", "z", "b"]);
    }
    await Promise.all([a.close(), late.close()]);
  });
});
