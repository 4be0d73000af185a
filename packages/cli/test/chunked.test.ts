import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL, openCounter, runCli, runJson, target, uniqueStream } from "./helpers.js";

/** The CLI on a log compacted with a chunked snapshot (docs/format.md, "Chunked snapshots"). */
describe("statesync on a chunked snapshot", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: "max_payload: 16384" });
  });
  afterAll(() => server?.stop());

  it("history lists the parts, info, state and verify read past them", async () => {
    const stream = uniqueStream("CHUNKCLI");
    const a = await openCounter(server.url, stream);
    for (let i = 0; i < 20; i++) await a.update("note", { text: `${i} ${"n".repeat(3_000)}` });
    await a.update("increment", { by: 5 });
    const { revision } = await a.compact();
    await a.close();
    const where = (...more: string[]) => target(server.url, stream, ...more);

    const rows = await runJson(["history", ...where()]);
    expect(rows[0]).toMatchObject({ kind: "part", parts: { index: 0 } });
    expect(rows.at(-1)).toMatchObject({
      kind: "snapshot",
      revision,
      parts: { count: rows.length - 1 },
    });
    const text = await runCli(["history", ...where()]);
    expect(text.stdout).toMatch(/part 1 of [0-9a-f]+ \(state at base \d+\)/);
    expect(text.stdout).toMatch(/in \d+ parts/);

    const info = await runJson(["info", ...where()]);
    expect(info).toMatchObject({ revision, lastSnapshot: { revision } });
    const { state } = await runJson(["state", ...where("--model", MODEL)]);
    expect(state.count).toBe(5);
    expect(state.notes).toHaveLength(20);
    const verify = await runJson(["verify", ...where("--model", MODEL)]);
    expect(verify.ok).toBe(true);
  });

  it("import of a state too large for one entry refuses before creating or writing anything", async () => {
    const stream = uniqueStream("CHUNKBIG");
    const a = await openCounter(server.url, stream);
    for (let i = 0; i < 8; i++) await a.update("note", { text: `${i} ${"n".repeat(3_000)}` });
    await a.compact();
    await a.close();
    const file = join(await mkdtemp(join(tmpdir(), "statesync-cli-")), "big.json");
    await runJson(["export", ...target(server.url, stream, "--model", MODEL), file]);

    const restored = uniqueStream("CHUNKBIG_RESTORED");
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await runCli(["import", file, ...target(server.url, restored)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^statesync: PAYLOAD_TOO_LARGE: the backed-up state makes a snapshot entry of \d+ bytes, larger than the 15360 bytes .* raise the server's max_payload .* Nothing was written\n$/,
      );
    }
    const info = await runCli(["info", ...target(server.url, restored)]);
    expect(info.stderr).toMatch(/^statesync: STREAM_CONFIG: stream \S+ does not exist/);
  });
});
