import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSynchronizer,
  JetStreamLog,
  openSynchronizer,
  startNatsServer,
  stateHash,
  type NatsServer,
  type StateSyncError,
} from "@statesync/node";
import { tcp, uniqueStream } from "./helpers.js";
import { blobs, counter } from "./support/models.js";
import { compactingBefore, overtakingConnection } from "./support/overtaking.js";

/**
 * Openings and catch-ups overtaken by compactions on nats-server. A new user's trial: fresh
 * replicas opened (SDK, `live` true and false; CLI `state` and `compact`) while other replicas ran
 * `update` + `compact()` in tight loops failed now and then (4 of 123) with `TRUNCATED: the log
 * no longer holds the entries after revision 0 (latest: 92)`, although every compaction leaves
 * its snapshot entry. The interleaving: a range read takes its range from stream info, a
 * compaction appends its snapshot entry past that range and purges everything before it, and
 * the read's consumer then finds nothing in its range; four such reads in a row and the replica
 * stalled. Here a compaction by another replica runs exactly there, ahead of each of the first
 * reads' consumers (`overtakingConnection`), so every one of those reads is overtaken.
 */
/** About 50 KB: two make a state past the small server's max_payload (chunked snapshots). */
const blob = (i: number) => `${i} ${"abcdefghij".repeat(5_000)}`;
const noAuto = { compaction: false, snapshots: false } as const;
/** Reads overtaken in a row: more than a catch-up used to try (four) before it stalled. */
const OVERTAKEN = 6;

describe("reads overtaken by compactions on nats-server", () => {
  let server: NatsServer;
  let small: NatsServer; // max_payload 64 KiB: a small state's snapshot comes in parts
  beforeAll(async () => {
    [server, small] = await Promise.all([
      startNatsServer(),
      startNatsServer({ extraConfig: "max_payload: 65536" }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.stop(), small?.stop()]);
  });

  it.each([false, true])(
    "an opening (live: %s) continues from the snapshot entry that overtook each read",
    async (live) => {
      const stream = uniqueStream("OVT");
      const base = { servers: server.url, stream, model: counter, ...noAuto };
      const writer = await openSynchronizer(base);
      for (let i = 0; i < 3; i++) await writer.update("increment", { by: 1 });
      await writer.compact();
      const overtake = compactingBefore(async () => {
        await writer.update("increment", { by: 1 });
        await writer.compact();
      }, OVERTAKEN);
      const nc = await tcp(server.url);
      const errors: StateSyncError[] = [];
      const victim = await createSynchronizer({
        log: new JetStreamLog({ connection: overtakingConnection(nc, overtake.before), stream }),
        model: counter,
        ...noAuto,
        live,
        onError: (e) => errors.push(e),
      }).catch((e: unknown) => e as StateSyncError);
      overtake.stop();
      expect(overtake.ran).toBeGreaterThanOrEqual(2); // its first reads were overtaken
      expect(victim).not.toBeInstanceOf(Error);
      if (victim instanceof Error) return;
      expect(victim.status).not.toBe("stalled");
      expect(errors).toEqual([]);
      await writer.update("increment", { by: 1 });
      if (live) await victim.waitFor(writer.revision);
      else await victim.fetchUpdates();
      expect(victim.revision).toBe(writer.revision);
      expect(victim.state).toEqual(writer.state);
      await Promise.all([victim.close(), writer.close()]);
      await nc.close();
    },
  );

  it("a catch-up of a replica that does not follow continues from the snapshot entry", async () => {
    const stream = uniqueStream("OVTC");
    const base = { servers: server.url, stream, model: counter, ...noAuto };
    const writer = await openSynchronizer(base);
    await writer.update("increment", { by: 1 });
    let armed = false;
    const overtake = compactingBefore(async () => {
      if (!armed) return;
      await writer.update("increment", { by: 1 });
      await writer.compact();
    }, 100);
    const nc = await tcp(server.url);
    const victim = await createSynchronizer({
      log: new JetStreamLog({ connection: overtakingConnection(nc, overtake.before), stream }),
      model: counter,
      ...noAuto,
      live: false,
    });
    for (let i = 0; i < 3; i++) await writer.update("increment", { by: 1 });
    armed = true;
    const ran = overtake.ran;
    const caughtUp = await victim.fetchUpdates().catch((e: unknown) => e as StateSyncError);
    const overtaken = overtake.ran - ran;
    armed = false;
    expect(overtaken).toBeGreaterThanOrEqual(2);
    expect(caughtUp).toBeTypeOf("number");
    expect(victim.status).not.toBe("stalled");
    await victim.fetchUpdates();
    expect(victim.revision).toBe(writer.revision);
    expect(victim.state).toEqual(writer.state);
    await Promise.all([victim.close(), writer.close()]);
    await nc.close();
  });

  it("an opening overtaken by chunked compactions loads the chunked snapshot that held on", async () => {
    const stream = uniqueStream("OVTK");
    const base = { servers: small.url, stream, model: blobs, ...noAuto };
    const writer = await openSynchronizer(base);
    for (let i = 0; i < 3; i++)
      await writer.updateUnconditionally("put", { key: `k${i}`, value: blob(i) });
    await writer.compact();
    expect((await writer.history())[0]!.kind).toBe("part"); // chunked from here on
    const overtake = compactingBefore(async () => {
      await writer.updateUnconditionally("increment", {});
      await writer.compact();
    }, OVERTAKEN);
    const nc = await tcp(small.url);
    const victim = await createSynchronizer({
      log: new JetStreamLog({ connection: overtakingConnection(nc, overtake.before), stream }),
      model: blobs,
      ...noAuto,
      live: false,
    }).catch((e: unknown) => e as StateSyncError);
    overtake.stop();
    expect(overtake.ran).toBeGreaterThanOrEqual(4);
    expect(victim).not.toBeInstanceOf(Error);
    if (victim instanceof Error) return;
    await victim.fetchUpdates();
    expect(victim.revision).toBe(writer.revision);
    expect(stateHash(victim.state)).toBe(stateHash(writer.state));
    await Promise.all([victim.close(), writer.close()]);
    await nc.close();
  });
});
