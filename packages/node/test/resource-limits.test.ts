import { readFile, writeFile } from "node:fs/promises";
import {
  defineModel,
  openSynchronizer,
  startNatsServer,
  type NatsServer,
  type StateSynchronizer,
} from "@statesync/node";
import { connect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { rejection, uniqueStream, until } from "./helpers.js";

/**
 * An account whose JetStream storage is full refuses appends (10002). Found by a trial on
 * nats-server 2.9.10: the first refused append stalled the writer `TRUNCATED` for good ("the log
 * no longer holds the entries after revision 8"), and so did every replica opened later, even
 * once the limit was raised: 2.9 uses up a stream sequence for a refused publish, storing nothing
 * there. Outcome on both servers of the matrix: a refused update rejects with `STREAM_CONFIG`
 * (`notSent`); once the limit is raised the writer's next update commits (2.9) or rejects with
 * `UNSUPPORTED_SERVER` (2.10, until the server restarts), never a stall; after a restart the
 * writer commits, and a live replica and a new one converge on the same state, stepping over
 * each used-up sequence with one `SKIPPED_SEQUENCE` event (2.10 uses none up).
 */
const LIMIT = "max_file: 400000";
const RAISED = "max_file: 20000000";
const accounts = `accounts { A { jetstream { ${LIMIT}, max_mem: 1000000 }, users: [{ user: a, password: a }] } }`;
const connectOptions = { user: "a", pass: "a" };

const model = defineModel({
  name: "blobs",
  state: z.object({ items: z.array(z.string()) }),
  initial: { items: [] },
  commands: {
    add: {
      args: z.object({ s: z.string() }),
      apply(d, { s }) {
        d.items.push(s.slice(0, 8));
      },
    },
  },
});

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ extraConfig: accounts });
});
afterAll(async () => {
  await server?.stop();
});

describe("appends refused for the account's resource limits", () => {
  it("reject with STREAM_CONFIG, and every replica goes on once the limit is raised", async () => {
    const stream = uniqueStream("FULL");
    const open = () =>
      openSynchronizer({ servers: server.url, connectOptions, stream, model, snapshots: false });
    const writer = await open();
    const follower = await open();
    const opened: StateSynchronizer<any, any>[] = [writer, follower];
    const skipped: number[] = [];
    follower.on("error", (e) => {
      if (e.code === "SKIPPED_SEQUENCE") skipped.push(e.details.revision as number);
    });
    try {
      const big = (i: number) => `big-${i}`.padEnd(8, "-") + "x".repeat(50_000);
      let refused: any;
      for (let i = 0; i < 20 && !refused; i++) {
        refused = await writer.update("add", { s: big(i) }).then(
          () => undefined,
          (e: unknown) => e,
        );
      }
      expect(refused?.code).toBe("STREAM_CONFIG");
      expect(refused?.details.notSent).toBe(true);
      // Refused again (each try on 2.9 uses up one more sequence; 2.10's check is now off by
      // the refused publish, see below): an error for the update, never a stall.
      for (const i of [100, 101]) {
        const again = await rejection(writer.update("add", { s: big(i) }));
        expect(["STREAM_CONFIG", "UNSUPPORTED_SERVER"]).toContain(again.code);
      }
      expect(writer.status).toBe("live");
      // A replica opened while the account is still full (2.9.10 then finds no last message on
      // the subject: a second trial saw it take every revision for used up, reset the state to
      // the initial one and write that into the log) holds the writer's state.
      const whileFull = await open();
      opened.push(whileFull);
      await whileFull.synced();
      expect(whileFull.state).toEqual(writer.state);
      const listed = (await whileFull.history()).map((e) => e.kind);
      expect(listed).not.toContain("malformed"); // a used-up sequence holds no entry to list
      expect(listed.length).toBe(writer.state.items.length + 1); // the genesis and each update

      const config = await readFile(server.configFile, "utf8");
      await writeFile(server.configFile, config.replace(LIMIT, RAISED));
      await server.kill("SIGHUP"); // reload
      // 2.9 takes the next update; 2.10 counted the refused publishes in the sequence that its
      // expected-last-sequence check compares with (nats-io/nats-server#7658): every conditional
      // append conflicts until the server restarts, which the writer reports instead of stalling.
      const outcome = await until(() =>
        writer.update("add", { s: "after-1" }).then(
          () => "committed",
          (e: { code?: string }) => (e.code === "STREAM_CONFIG" ? undefined : e.code),
        ),
      );
      expect(["committed", "UNSUPPORTED_SERVER"]).toContain(outcome);
      if (outcome === "UNSUPPORTED_SERVER") {
        // A compaction names the server bug too (before: RETRY_LIMIT, 100 races lost to nobody).
        const compacted = await writer.compact().then(
          () => "compacted",
          (e: { code?: string }) => e.code,
        );
        expect(compacted).toBe("UNSUPPORTED_SERVER");
      }
      expect(writer.status).toBe("live");
      await server.restart();
      if (outcome !== "committed")
        await until(() =>
          writer.update("add", { s: "after-1" }).then(
            () => true,
            () => undefined,
          ),
        );
      await writer.update("add", { s: "after-2" });
      const late = await open();
      opened.push(late);
      await late.synced();
      await until(() =>
        follower.revision === writer.revision && late.revision === writer.revision
          ? true
          : undefined,
      );
      expect(follower.state).toEqual(writer.state);
      expect(late.state).toEqual(writer.state);
      expect(writer.state.items.slice(-2)).toEqual(["after-1", "after-2"]);
      expect([writer.status, follower.status, late.status]).toEqual(["live", "live", "live"]);

      // One SKIPPED_SEQUENCE event per sequence the server used up without storing anything.
      const nc = await connect({ servers: server.url, ...connectOptions });
      const si = await (await nc.jetstreamManager()).streams.info(stream);
      await nc.close();
      const usedUp = si.state.num_deleted ?? 0;
      expect(skipped.length).toBe(usedUp);
      expect(new Set(skipped).size).toBe(usedUp);
    } finally {
      await Promise.all(opened.map((s) => s.close()));
    }
  });
});
