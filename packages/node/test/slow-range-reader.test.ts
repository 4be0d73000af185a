import { setTimeout as sleep } from "node:timers/promises";
import { JetStreamLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "./helpers.js";
import { CLIENT_LINES } from "./support/client-lines.js";

/**
 * Found in CI ("reads a bounded range", nats.ws 2.x, 1 run in about 20): nats.js 2.x's ordered
 * `fetch()` ends its iterator as soon as the pull is complete and drops the messages it queued
 * but had not handed on yet. Entries of 100 KB arrive in several reads, and a reader that awaits
 * between entries (as a replica applying them does) makes it happen on nearly every pull: before
 * the fix a shared-layout read returned 26 of 40 entries with no error (entries 2-15 skipped),
 * and an owned one took 30 s of consumer restarts, or ended short when the next delivery lay
 * past its end. Outcome: every read returns every entry, in order, on both client lines and both
 * transports, in both layouts.
 */
const ctx = useNatsServer();
const ENTRIES = 30;

describe.each(CLIENT_LINES)("a slow reader of large entries, nats.js $name", (line) => {
  const cases = [
    { transport: "TCP", layout: "own stream", key: undefined },
    { transport: "TCP", layout: "shared stream", key: "tenant.a" },
    { transport: "WebSocket", layout: "own stream", key: undefined },
    { transport: "WebSocket", layout: "shared stream", key: "tenant.a" },
  ] as const;
  it.each(cases)("$transport, $layout: reads every entry", async ({ transport, key }) => {
    const nc =
      transport === "TCP" ? await line.tcp(ctx.server.url) : await line.websocket(ctx.server.wsUrl);
    const stream = uniqueStream("SLOW");
    const log = new JetStreamLog({ connection: nc, stream, key, ...line.logOptions });
    try {
      const written: number[] = [];
      for (let i = 0; i < ENTRIES; i++) {
        const entry = new Uint8Array(100_000).fill(i);
        written.push((await log.appendUnconditional(entry, `e${i}`)).revision);
      }
      const read: number[] = [];
      const firstBytes: number[] = [];
      for await (const e of log.read(written[0]!, written.at(-1)!)) {
        read.push(e.revision);
        firstBytes.push(e.data[0]!);
        await sleep(10);
      }
      expect(read).toEqual(written);
      expect(firstBytes).toEqual(written.map((_, i) => i));
    } finally {
      await log.close();
      await (await line.admin(nc)).streams.delete(stream).catch(() => undefined);
      await nc.close();
    }
  });
});
