import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/**
 * `subscribe` and `on` after `close()` are accepted and call nothing (synchronizer-types.ts
 * says why: a UI rendering a closed replica listens again); the listeners of another replica of
 * the same log still hear its writes.
 */
describe("listeners of a closed replica", () => {
  it("are accepted and never called", async () => {
    const server = new MemoryLog();
    const a = await open(server.handle(), { compaction: false });
    const b = await open(server.handle(), { compaction: false });
    await a.close();
    const heard: string[] = [];
    const offs = [
      a.subscribe(() => heard.push("a state")),
      a.subscribe(() => heard.push("a optimistic"), { optimistic: true }),
      a.on("status", (s) => heard.push(`a status ${s}`)),
      a.on("error", () => heard.push("a error")),
      b.subscribe(() => heard.push("b state")),
    ];
    expect(() => a.subscribe("nope" as never)).toThrow(/listener/);
    await b.update("increment", { by: 1 });
    await b.close();
    for (const off of offs) off();
    expect(heard).toEqual(["b state"]);
  });
});
