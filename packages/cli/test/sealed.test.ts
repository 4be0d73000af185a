import path from "node:path";
import { fileURLToPath } from "node:url";
import { JetStreamLog } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  MODEL,
  openCounter,
  runCli,
  runJson,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * A sealed stream (an operator's archive) is read by every command that only reads, and refused
 * by those that write. A fresh-eyes trial found history, state, verify, export and info refusing
 * it (`STREAM_CONFIG: … a sealed stream cannot be written`), and info saying `model unknown (no
 * genesis or snapshot entry read)` although revision 1 is the genesis.
 */
describe("a sealed stream", () => {
  const ctx = useNatsServer();

  async function sealedStream(): Promise<string> {
    const stream = uniqueStream("SEALED");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 });
    await a.close();
    const nc = await tcp(ctx.server.url);
    const jsm = await nc.jetstreamManager();
    const si = await jsm.streams.info(stream);
    // nats.js's update type leaves out `sealed`, which the server accepts (seal.mjs of the trial).
    await jsm.streams.update(stream, { ...si.config, sealed: true } as typeof si.config);
    await nc.close();
    return stream;
  }

  it("is read by info, history, state, verify and export", async () => {
    const stream = await sealedStream();
    const where = (...more: string[]) => target(ctx.server.url, stream, ...more);

    const info = await runJson(["info", ...where()]);
    expect(info).toMatchObject({
      revision: 2,
      entries: 2,
      model: { name: "counter", from: "genesis", revision: 1 },
      configSafe: false,
      configProblems: ["a sealed stream cannot be written"],
    });
    const text = await runCli(["info", ...where()]);
    expect(text.stdout).toMatch(/model\s+counter v1 \(from the genesis entry at revision 1\)/);

    expect(await runJson(["history", ...where()])).toHaveLength(2);
    expect(await runJson(["state", ...where("--model", MODEL)])).toEqual({
      revision: 2,
      state: { count: 3, notes: [] },
    });
    expect(await runJson(["verify", ...where("--model", MODEL)])).toMatchObject({ ok: true });
    const file = path.join(ctx.dir, `${stream}.json`);
    expect(await runJson(["export", ...where("--model", MODEL), file])).toMatchObject({
      revision: 2,
    });
  });

  it("is refused by compact, which would write", async () => {
    const stream = await sealedStream();
    const r = await runCli(["compact", ...target(ctx.server.url, stream, "--model", MODEL)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^statesync: STREAM_CONFIG: .*a sealed stream cannot be written/);
  });

  it("is refused by migrate, and by migrate --dry-run alike (it runs the switch's checks)", async () => {
    // Before, the dry run opened the log read-only and said "would switch" (exit 0) for a
    // switch the real run refused (a fresh-eyes trial found the same with PAYLOAD_TOO_LARGE).
    const stream = await sealedStream();
    const v2 = fileURLToPath(new URL("./fixtures/counter-v2.mjs", import.meta.url));
    for (const extra of [["--dry-run"], []]) {
      const r = await runCli([
        "migrate",
        ...target(ctx.server.url, stream, "--model", v2),
        ...extra,
      ]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(/^statesync: STREAM_CONFIG: .*a sealed stream cannot be written/);
    }
  });

  it("a log opened read-only refuses writes without sending them", async () => {
    const stream = await sealedStream();
    const nc = await tcp(ctx.server.url);
    const log = await JetStreamLog.open({ connection: nc, stream, create: false, readOnly: true });
    await expect(log.appendUnconditional(new Uint8Array([1]), "x")).rejects.toMatchObject({
      code: "STREAM_CONFIG",
    });
    await expect(log.truncateBefore(2)).rejects.toMatchObject({ code: "STREAM_CONFIG" });
    expect((await log.info()).latestRevision).toBe(2);
    await log.close();
    await nc.close();
    // Not read-only: a sealed stream is refused when opened.
    const nc2 = await tcp(ctx.server.url);
    await expect(
      JetStreamLog.open({ connection: nc2, stream, create: false }),
    ).rejects.toMatchObject({
      code: "STREAM_CONFIG",
    });
    await nc2.close();
  });
});
