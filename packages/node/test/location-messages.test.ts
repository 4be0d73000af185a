import {
  defineModel,
  jetStreamSnapshotKey,
  JetStreamLog,
  openSynchronizer,
  type StateSyncError,
} from "@statesync/node";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { tcp, useNatsServer } from "./helpers.js";

const model = defineModel({
  name: "m",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {},
});

/** Where a state lives, as a user gives it (each field only when given). */
type Location = {
  stream?: unknown;
  key?: unknown;
  subjectPrefix?: unknown;
  fanout?: boolean | { prefix: string };
};

/**
 * Bad locations and what their message must say. Regression test (fresh-eyes trial):
 * `openSynchronizer({ stream: "$JS", … })` failed with "invalid subject prefix undefined",
 * naming an option the user never gave; the default subject derives from the stream name, so
 * the message must name the stream and say why.
 */
const cases: Array<[Location, RegExp]> = [
  [{ stream: "$JS" }, /^stream "\$JS" .*"\$JS\.log".*'\$'.*give a subjectPrefix/],
  [{ stream: "$KV", key: "a" }, /^stream "\$KV" .*"\$KV\.a".*'\$'/],
  [{ stream: "S", subjectPrefix: "$X" }, /^invalid subject prefix "\$X": .*'\$'/],
  [{ stream: "S", subjectPrefix: "" }, /^invalid subject prefix "": it is empty/],
  [{ stream: "S", subjectPrefix: "a..b" }, /^invalid subject prefix "a\.\.b": .*tokens/],
  [{ stream: "S", subjectPrefix: "a.>" }, /^invalid subject prefix "a\.>": .*wildcards/],
  [{ stream: "S", subjectPrefix: "p".repeat(257) }, /^invalid subject prefix "p+": .*256/],
  [{ stream: "a.b" }, /^invalid stream name "a\.b"/],
  [{ stream: "" }, /^invalid stream name ""/],
  [{ stream: "S", key: "a b" }, /^invalid key "a b"/],
  [{ stream: "S", key: "" }, /^invalid key ""/],
  [{ stream: "statesync", fanout: true }, /^the default fanout prefix statesync\.live .*prefix/],
  [
    { stream: "S", subjectPrefix: "live.s", fanout: { prefix: "live.x" } },
    /^fanout prefix live\.x overlaps/,
  ],
];

/** The options a message may name: those given, and the stream (subjects derive from it). */
function namesOnlyWhatWasGiven(message: string, where: Location): void {
  expect(message).not.toMatch(/undefined/);
  if (where.subjectPrefix === undefined) expect(message).not.toMatch(/invalid subject prefix/);
  if (where.key === undefined) expect(message).not.toMatch(/\bkey\b/);
  if (typeof where.fanout !== "object") expect(message).not.toMatch(/^fanout prefix/);
}

describe("messages of a bad location name what the user gave", () => {
  const ctx = useNatsServer();

  it("openSynchronizer, JetStreamLog and jetStreamSnapshotKey", async () => {
    const nc = await tcp(ctx.server.url);
    try {
      for (const [where, expected] of cases) {
        const label = JSON.stringify(where);
        const opened = (await openSynchronizer({
          servers: ctx.server.url,
          model,
          snapshots: false,
          ...where,
        } as never).catch((e: unknown) => e)) as StateSyncError;
        expect([opened.code, opened.message], label).toEqual(["VALIDATION", expect.any(String)]);
        expect(opened.message, label).toMatch(expected);
        namesOnlyWhatWasGiven(opened.message, where);

        let constructed: StateSyncError | undefined;
        try {
          await new JetStreamLog({ connection: nc, ...where } as never).close();
        } catch (e) {
          constructed = e as StateSyncError;
        }
        expect(constructed?.message, label).toBe(opened.message);

        if (where.fanout === undefined) {
          expect(() => jetStreamSnapshotKey(where as never), label).toThrow(opened.message);
        }
      }
    } finally {
      await nc.close();
    }
  });
});
