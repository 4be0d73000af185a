import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StateSyncError } from "@statesync/core";
import { openSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import { tcp, uniqueStream, until } from "../helpers.js";
import { counter } from "../support/models.js";

/**
 * Issue 13 (fresh-eyes trial): on a server with a low `max_pending` (the bytes it buffers for a
 * client before it cuts it as a slow consumer), a catching-up replica was cut at the same pull
 * again and again and never got further: its pulls were sized by a fixed 16 MiB (256 entries of
 * 4 KB here, 16 times `max_pending`), and a read that failed midway dropped the entries it had
 * delivered. Now a cut pull makes this log's later pulls smaller (never below half the server's
 * `max_payload`, which nats-server keeps at most `max_pending`), and what was delivered before a
 * cut is applied, so the catch-up gets through.
 */
const MAX_PENDING = 64 * 1024;
const ENTRIES = 300;
const ENTRY_BYTES = 4_000;

let server: NatsServer;
beforeAll(async () => {
  // nats-server refuses a max_payload above max_pending.
  server = await startNatsServer({
    extraConfig: `max_pending: ${MAX_PENDING}\nmax_payload: ${MAX_PENDING}`,
  });
});
afterAll(async () => {
  await server?.stop();
});

describe("a server with max_pending far below a read batch", () => {
  it("a replica catching up is cut as a slow consumer, and still catches up with every entry", async () => {
    const stream = uniqueStream("MAXPEND");
    const options = { servers: server.url, stream, model: counter, snapshots: false as const };
    const writer = await openSynchronizer({ ...options, live: false, compaction: false });
    const pad = "x".repeat(ENTRY_BYTES);
    for (let i = 0; i < ENTRIES; i += 30) {
      await Promise.all(
        Array.from({ length: 30 }, (_, j) =>
          writer.updateUnconditionally("record", { id: `${i + j}:${pad}` }),
        ),
      );
    }
    await writer.fetchUpdates();
    const latest = writer.revision;
    expect(writer.state.seen).toHaveLength(ENTRIES);
    await writer.close();

    const errors: StateSyncError[] = [];
    const reader = await openSynchronizer({
      ...options,
      compaction: false,
      connectOptions: { reconnectTimeWait: 100 },
      onError: (e) => errors.push(e),
    });
    try {
      await until(() => (reader.revision >= latest ? true : undefined), 50_000);
      await until(() => (reader.status === "live" ? true : undefined));
      expect(reader.state.seen).toHaveLength(ENTRIES);
      expect(reader.state.seen.map((s) => Number(s.split(":")[0]))).toEqual(
        Array.from({ length: ENTRIES }, (_, i) => i),
      );
      expect(errors).toEqual([]);
    } finally {
      await reader.close();
    }
    // The scenario did what it says: the server cut the reader as a slow consumer.
    expect(server.output()).toMatch(/Slow Consumer Detected: MaxPending of 65536 Exceeded/);
    // Nothing was written by the reader (no restart of the log from an initial state).
    const nc = await tcp(server.url);
    try {
      const info = await (await nc.jetstreamManager()).streams.info(stream);
      expect(info.state.last_seq).toBe(latest);
    } finally {
      await nc.close();
    }
  }, 60_000);
});
