import {
  defineModel,
  isStateSyncError,
  JetStreamLog,
  openSynchronizer,
  type StateSyncError,
} from "@statesync/node";
import type { JetStreamManager, NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { rejection, tcp, uniqueStream, useNatsServer } from "./helpers.js";

/**
 * Found by a fresh-eyes trial: the configuration check accepted a stream made without
 * `deny_delete` as safe, although deleting one of its messages makes every new replica stop
 * with `TRUNCATED`, and the streams statesync creates set `deny_delete: true`. Such a stream is
 * still opened (it works until someone deletes a message), with one `STREAM_CONFIG` warning
 * (`details.usable: true`), as other risks the log takes are reported. Both servers of the
 * matrix.
 */
const ctx = useNatsServer();
let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  nc = await tcp(ctx.server.url);
  jsm = await nc.jetstreamManager();
});
afterAll(() => nc?.close());

const counter = defineModel({
  name: "deny-delete",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});

/** The warnings a log opened on `stream` (with `key` for the shared layout) gives. */
async function warningsOf(stream: string, key?: string): Promise<StateSyncError[]> {
  const log = await JetStreamLog.open({ connection: nc, stream, key });
  const warnings: StateSyncError[] = [];
  log.watchWarnings((w) => warnings.push(w));
  await log.info(); // a later read of the configuration gives the same warning no second time
  await log.close();
  return warnings;
}

describe("a stream without deny_delete", () => {
  it.each([
    ["own", undefined, (s: string) => `${s}.log`],
    ["shared", "k", (s: string) => `${s}.>`],
  ])(
    "%s layout: opened, with one STREAM_CONFIG warning naming deny_delete",
    async (_, key, subject) => {
      const stream = uniqueStream("NODENY");
      await jsm.streams.add({ name: stream, subjects: [subject(stream)] });
      const warnings = await warningsOf(stream, key);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.code).toBe("STREAM_CONFIG");
      expect(warnings[0]!.details).toMatchObject({ stream, usable: true });
      expect(warnings[0]!.message).toMatch(/deny_delete is off/);
      // The remedy the warning names: the stream updated to deny deletes (it cannot be undone).
      await jsm.streams.update(stream, { deny_delete: true });
      expect(await warningsOf(stream, key)).toEqual([]);
    },
  );

  it("a stream statesync created (deny_delete: true) gives no warning", async () => {
    const stream = uniqueStream("DENY");
    await JetStreamLog.open({ connection: nc, stream }).then((log) => log.close());
    expect((await jsm.streams.info(stream)).config.deny_delete).toBe(true);
    expect(await warningsOf(stream)).toEqual([]);
  });

  it("a replica reports it as an error event, stays live and writable; the warning is right: one deleted message stops a new replica", async () => {
    const stream = uniqueStream("NODENY");
    await jsm.streams.add({ name: stream, subjects: [`${stream}.log`] });
    const errors: StateSyncError[] = [];
    const a = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: counter,
      snapshots: false,
      onError: (e) => errors.push(e),
    });
    await a.update("inc", {});
    const { revision } = await a.update("inc", {});
    expect(a.status).toBe("live");
    expect(a.writable).toBe(true);
    expect(errors.map((e) => [e.code, e.details.usable])).toEqual([["STREAM_CONFIG", true]]);
    await a.close();

    await jsm.streams.deleteMessage(stream, revision - 1);
    const late = await rejection(
      openSynchronizer({ servers: ctx.server.url, stream, model: counter, snapshots: false }),
    );
    expect(isStateSyncError(late, "TRUNCATED"), String(late)).toBe(true);
  });
});
