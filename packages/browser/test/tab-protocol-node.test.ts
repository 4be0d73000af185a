// What the tabs' protocol carries of an entry (docs/offline.md, "Tabs"): a follower tab's replica
// gets from the leading tab what the leading tab's log delivered, the leader's own replica the same.
import type { LogEntry } from "@statesync/core";
import { expect, it } from "vitest";
import { messageSchema, toWire } from "../src/tabs/protocol.js";

/** `entry` as a follower tab receives it: posted by the leader, checked on arrival. */
function received(entry: LogEntry): LogEntry {
  const m = messageSchema.parse(structuredClone({ t: "entry", from: "a", entry: toWire(entry) }));
  if (m.t !== "entry") throw new Error("not an entry");
  return m.entry;
}

it("a revision the log holds no entry at (skipped) reaches follower tabs as skipped", () => {
  // JetStream: a sequence nats-server 2.9 used up for a publish its limits refused. Before, the
  // flag was lost on the way: a follower tab's replica got empty bytes and reported them as a
  // CORRUPT_ENTRY ("malformed entry") where the leading tab's reported SKIPPED_SEQUENCE.
  const got = received({ revision: 7, data: new Uint8Array(), skipped: true });
  expect(got).toEqual({ revision: 7, data: new Uint8Array(), skipped: true });
});

it("an ordinary entry keeps its bytes and message id, and gains no flag", () => {
  const got = received({ revision: 3, data: new Uint8Array([1, 2]), messageId: "m3" });
  expect(got).toEqual({ revision: 3, data: new Uint8Array([1, 2]), messageId: "m3" });
  expect("skipped" in got).toBe(false);
});
