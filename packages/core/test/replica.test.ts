import { describe, expect, it } from "vitest";
import { OwnEntries } from "../src/engine/own-entries.js";
import { Replica } from "../src/engine/replica.js";
import { emptyStats, StatusHub } from "../src/engine/status.js";
import { bytes, genesisText, incText, tinyModel as model } from "./engine-fixtures.js";

const genesis = { revision: 1, data: bytes(genesisText) };
const inc = (revision: number) => ({ revision, data: bytes(incText) });

describe("Replica (state, waiters, subscribers, applied event)", () => {
  it("announces each batch before waiters resolve, then notifies subscribers once", async () => {
    const status = new StatusHub();
    const replica = new Replica(model, true, status, emptyStats(), new OwnEntries());
    const order: string[] = [];
    replica.onApplied((b) => order.push(`applied:${b.entries.length}`));
    replica.subscribe((s, r) => order.push(`subscriber:${r}:${s.n}`));
    const waiting = replica.waitFor(3, undefined).then(() => order.push("waiter"));
    replica.consume([genesis, inc(2), inc(3)]);
    await waiting;
    await Promise.resolve();
    expect(order).toEqual(["applied:3", "waiter", "subscriber:3:2"]);
  });

  it("rejects waiters with the stall, and stops consuming, when an entry cannot be applied", async () => {
    const status = new StatusHub();
    const replica = new Replica(model, true, status, emptyStats(), new OwnEntries());
    replica.consume([genesis]);
    const waiting = replica.waitFor(5, undefined);
    const unknown = {
      revision: 2,
      data: bytes(incText.replace('"inc"', '"nope"')),
    };
    replica.consume([unknown]);
    await expect(waiting).rejects.toMatchObject({ code: "UNKNOWN_COMMAND" });
    expect(status.status).toBe("stalled");
    replica.consume([inc(3)]);
    expect(replica.revision).toBe(1);
  });

  it("adopts its own update only when it is the next entry", () => {
    const status = new StatusHub();
    const replica = new Replica(model, true, status, emptyStats(), new OwnEntries());
    replica.consume([genesis]);
    const update = {
      v: 1,
      kind: "update",
      base: 1,
      ts: 1,
      seed: 1,
      client: "me",
      patches: [],
    } as const;
    expect(
      replica.adopt({ revision: 3, data: new Uint8Array() }, { ...update, patches: [] }, { n: 9 }),
    ).toBe(false);
    expect(
      replica.adopt({ revision: 2, data: new Uint8Array() }, { ...update, patches: [] }, { n: 9 }),
    ).toBe(true);
    expect(replica.state).toEqual({ n: 9 });
    expect(replica.revision).toBe(2);
  });
});
