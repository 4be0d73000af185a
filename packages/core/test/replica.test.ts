import { defineModel, type SyncStats } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { OwnEntries } from "../src/engine/own-entries.js";
import { Replica } from "../src/engine/replica.js";
import { StatusHub } from "../src/engine/status.js";

const model = defineModel({
  name: "r",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const bytes = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const genesis = {
  revision: 1,
  data: bytes({
    v: 1,
    kind: "genesis",
    ts: 1,
    client: "g",
    model: "r",
    version: 1,
    initialHash: model.initialHash,
  }),
};
const inc = (revision: number) => ({
  revision,
  data: bytes({ v: 1, kind: "command", ts: 1, seed: 1, client: "o", name: "inc", args: {} }),
});
const stats = (): SyncStats => ({
  entriesFetched: 0,
  entriesApplied: 0,
  entriesSkipped: 0,
  bytesFetched: 0,
  appends: 0,
  conflicts: 0,
  attempts: 0,
  resends: 0,
  snapshotsSaved: 0,
  snapshotsRestored: 0,
  compactions: 0,
});

describe("Replica (state, waiters, subscribers, applied event)", () => {
  it("announces each batch before waiters resolve, then notifies subscribers once", async () => {
    const status = new StatusHub();
    const replica = new Replica(model, true, status, stats(), new OwnEntries());
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
    const replica = new Replica(model, true, status, stats(), new OwnEntries());
    replica.consume([genesis]);
    const waiting = replica.waitFor(5, undefined);
    const unknown = {
      revision: 2,
      data: bytes({ v: 1, kind: "command", ts: 1, seed: 1, client: "o", name: "nope", args: {} }),
    };
    replica.consume([unknown]);
    await expect(waiting).rejects.toMatchObject({ code: "UNKNOWN_COMMAND" });
    expect(status.status).toBe("stalled");
    replica.consume([inc(3)]);
    expect(replica.revision).toBe(1);
  });

  it("adopts its own update only when it is the next entry", () => {
    const status = new StatusHub();
    const replica = new Replica(model, true, status, stats(), new OwnEntries());
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
