import { JetStreamLog, type LogEntry } from "@statesync/node";
import { afterAll, describe, expect, it, vi } from "vitest";
import { bytes, tcp, uniqueStream, until, useNatsServer } from "./helpers.js";

// The fan-out follower is loaded on demand (README, "Bundle size"). A load that fails (a page
// that lost its network between opening and following) must not leave the log without a live
// follower: the consumer follower goes on instead.
const loads = vi.hoisted(() => ({ fail: 0 }));

vi.mock("../../core/dist/jetstream/fanout-follower.js", async (importOriginal) => {
  if (loads.fail > 0) {
    loads.fail -= 1;
    throw new TypeError("Failed to fetch dynamically imported module");
  }
  return importOriginal();
});

const ctx = useNatsServer();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

describe("fan-out follower loaded on demand", () => {
  it("follows with a consumer when its code cannot be loaded, losing nothing", async () => {
    const stream = uniqueStream("FANLOAD");
    const open = async () => {
      const nc = await tcp(ctx.server.url);
      closers.push(() => nc.close());
      const log = await JetStreamLog.open({ connection: nc, stream, fanout: true });
      closers.push(() => log.close());
      return log;
    };
    const writer = await open();
    const reader = await open();
    loads.fail = 2; // the load at the follower's start and its retry once the stream is open
    const got: LogEntry[] = [];
    reader.follow(1, { onEntry: (e) => got.push(e) });
    for (let i = 1; i <= 5; i++) await writer.appendUnconditional(bytes(`e${i}`), `m${i}`);
    await until(() => (got.length === 5 ? true : undefined));
    expect(reader.liveVia).toBe("consumer");
    expect(got.map((e) => e.revision)).toEqual([1, 2, 3, 4, 5]);
    // The next follower loads it and follows through the republished entries.
    const later: LogEntry[] = [];
    reader.follow(1, { onEntry: (e) => later.push(e) });
    await until(() => (later.length === 5 ? true : undefined));
    expect(reader.liveVia).toBe("republish");
  });
});
