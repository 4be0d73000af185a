import { JetStreamLog } from "@statesync/node";
import { describe, expect, it, onTestFinished } from "vitest";
import { compactingBefore, overtakingConnection } from "../../node/test/support/overtaking.js";
import { readStateOf } from "../src/commands/state.js";
import type { AnyModel } from "../src/model-file.js";
import { withReplica } from "../src/replica.js";
import { counter, openCounter, tcp, uniqueStream, useNatsServer } from "./helpers.js";

/**
 * `statesync state` and `compact` while other replicas compact in tight loops. A new user's
 * trial: now and then `TRUNCATED: the log no longer holds the entries after revision 0`, and once
 * `CORRUPT_ENTRY: the first retained entry (revision 493) is malformed` for a sound log: the
 * first-entry check read the log's first revision after a compaction had removed it, and its
 * reads to the log's end came back empty each time a compaction overtook them. Here another
 * replica compacts ahead of each of the command's first reads (point reads and range reads).
 */
describe("the CLI's replica overtaken by compactions", () => {
  const ctx = useNatsServer();
  const model = counter as unknown as AnyModel;

  async function overtaken(times: number) {
    const stream = uniqueStream("COVT");
    const writer = await openCounter(ctx.server.url, stream);
    for (let i = 0; i < 3; i++) await writer.update("increment", { by: 1 });
    await writer.compact();
    const overtake = compactingBefore(
      async () => {
        await writer.update("increment", { by: 1 });
        await writer.compact();
      },
      times,
      ["get", "consumer"],
    );
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: overtakingConnection(nc, overtake.before), stream });
    onTestFinished(async () => {
      await log.close();
      await Promise.all([writer.close(), nc.close()]);
    });
    return { writer, overtake, log };
  }

  it("state: reads the state from the snapshot entry that overtook its reads", async () => {
    const { writer, overtake, log } = await overtaken(12);
    const read = await readStateOf(log, model, undefined).catch((e: unknown) => e as Error);
    expect(read).not.toBeInstanceOf(Error);
    expect(overtake.ran).toBeGreaterThanOrEqual(3);
    overtake.stop();
    await writer.synced();
    expect(read).toMatchObject({ revision: writer.revision, state: writer.state });
  });

  it("compact: compacts from the snapshot entry that overtook its reads", async () => {
    const { writer, overtake, log } = await overtaken(12);
    const compacted = await withReplica(log, model, async (replica) => {
      overtake.stop(); // its own compaction is not raced here
      return (await replica!.compact()).revision;
    }).catch((e: unknown) => e as Error);
    expect(compacted).not.toBeInstanceOf(Error);
    expect(overtake.ran).toBeGreaterThanOrEqual(3);
    await writer.synced();
    expect(compacted).toBe(writer.revision);
    expect((await log.info()).firstRevision).toBe(compacted);
  });
});
