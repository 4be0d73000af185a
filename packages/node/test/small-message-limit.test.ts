import { isStateSyncError, JetStreamLog, type StateSyncError } from "@statesync/core";
import { defineModel, openSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import type { JetStreamManager, NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { rejection, tcp, uniqueStream, until } from "./helpers.js";

const notes = defineModel({
  name: "notes",
  state: z.object({ notes: z.array(z.string()) }),
  initial: { notes: [] as string[] },
  commands: {},
});

/**
 * A message size limit that leaves too little room for entries (a fresh-eyes trial): a stream
 * with `max_msg_size` 1,500 opened, and its compaction wrote a 15 KB state as 15,600 parts of
 * one character each (a million parts for 1 MB); at 1,024 or less every append failed
 * `PAYLOAD_TOO_LARGE`, "the log accepts at most 0", naming no setting. Now such a stream is
 * refused at open, its setting named, like any other unsafe configuration (`STREAM_CONFIG`), and
 * a server whose `max_payload` is that small is `UNSUPPORTED_SERVER`. A log opened only to read
 * needs no room.
 */

let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await tcp(server.url);
  jsm = await nc.jetstreamManager();
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

async function streamWithLimit(maxMsgSize: number): Promise<string> {
  const stream = uniqueStream();
  await jsm.streams.add({ name: stream, subjects: [`${stream}.log`], max_msg_size: maxMsgSize });
  return stream;
}

describe("a stream whose max_msg_size leaves too little room for entries", () => {
  it.each([300, 1_024, 1_500, 2_047])(
    "max_msg_size %i: the open is STREAM_CONFIG naming it",
    async (size) => {
      const stream = await streamWithLimit(size);
      const err = await rejection(openSynchronizer({ connection: nc, stream, model: notes }));
      expect(isStateSyncError(err, "STREAM_CONFIG")).toBe(true);
      expect(err.message).toContain(`max_msg_size ${size} leaves too little room for entries`);
      expect((await jsm.streams.info(stream)).state.messages).toBe(0); // nothing written
    },
  );

  it("max_msg_size 2,048 opens, and a compaction writes parts of about 800 bytes or more", async () => {
    const stream = await streamWithLimit(2_048);
    const sync = await openSynchronizer({
      connection: nc,
      stream,
      model: notes,
      snapshots: false,
      compaction: false,
    });
    for (let i = 0; i < 40; i++) {
      await sync.update((d) => {
        d.notes.push(`${i} ${"y".repeat(500)}`);
      });
    }
    const before = (await jsm.streams.info(stream)).state.last_seq;
    await sync.compact();
    const after = (await jsm.streams.info(stream)).state.last_seq;
    // 20 KB of state: about 25 parts of 800 bytes, part 0 and the snapshot entry.
    expect(after - before).toBeGreaterThan(2);
    expect(after - before).toBeLessThan(40);
    const fresh = await openSynchronizer({
      connection: nc,
      stream,
      model: notes,
      snapshots: false,
    });
    expect(fresh.state).toEqual(sync.state);
    await Promise.all([fresh.close(), sync.close()]);
  });

  it("lowered under a live replica to 1,500: the replica reports STREAM_CONFIG naming it", async () => {
    const stream = uniqueStream();
    const errors: StateSyncError[] = [];
    const sync = await openSynchronizer({
      connection: nc,
      stream,
      model: notes,
      snapshots: false,
      streamCheckIntervalMs: 200,
      onError: (e) => errors.push(e),
    });
    await sync.update((d) => {
      d.notes.push("a");
    });
    const si = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...si.config, max_msg_size: 1_500 });
    await until(() => (errors.some((e) => e.code === "STREAM_CONFIG") ? true : undefined));
    const reported = errors.find((e) => e.code === "STREAM_CONFIG")!;
    expect(reported.message).toContain("max_msg_size 1500 leaves too little room for entries");
    await sync.close();
  });

  it("lowered under a live replica to 2,500 (still usable): its compact() goes chunked at once", async () => {
    // A fresh-eyes trial: the replica kept the limit it learnt at open, and every compact()
    // failed PAYLOAD_TOO_LARGE ("34708 bytes exceeds the log's maximum of 1476"), refused by the
    // server each time, never chunked.
    const stream = uniqueStream();
    const sync = await openSynchronizer({
      connection: nc,
      stream,
      model: notes,
      snapshots: false,
      compaction: false,
    });
    for (let i = 0; i < 40; i++) {
      await sync.update((d) => {
        d.notes.push(`${i} ${"z".repeat(500)}`);
      });
    }
    const si = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...si.config, max_msg_size: 2_500 });
    await sync.compact();
    const fresh = await openSynchronizer({
      connection: nc,
      stream,
      model: notes,
      snapshots: false,
    });
    expect(fresh.state).toEqual(sync.state);
    await Promise.all([fresh.close(), sync.close()]);
  });

  it("a log opened only to read (readOnly) opens: reading needs no room", async () => {
    const stream = await streamWithLimit(1_500);
    const log = await JetStreamLog.open({ connection: nc, stream, readOnly: true });
    expect((await log.info()).latestRevision).toBe(0);
    await log.close();
  });
});

describe("a server whose max_payload leaves too little room for entries", () => {
  it("the open is UNSUPPORTED_SERVER naming max_payload, nothing created", async () => {
    const small = await startNatsServer({ extraConfig: "max_payload: 1500" });
    const conn = await tcp(small.url);
    try {
      const stream = uniqueStream();
      const err = await rejection(openSynchronizer({ connection: conn, stream, model: notes }));
      expect(isStateSyncError(err, "UNSUPPORTED_SERVER")).toBe(true);
      expect(err.message).toContain("max_payload 1500 leaves too little room for entries");
    } finally {
      await conn.close();
      await small.stop();
    }
  });
});
