import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { textSlices } from "../src/restore-chunked.js";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
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

  // Regression test (fresh-eyes trial): `state --at` a revision among the parts the compacted log
  // starts with said "before the retained history", though `history` lists those revisions.
  it("state --at a revision among the parts answers the state there, as history lists it", async () => {
    const stream = uniqueStream("CHUNKAT");
    const a = await openCounter(server.url, stream);
    for (let i = 0; i < 12; i++) await a.update("note", { text: `${i} ${"n".repeat(3_000)}` });
    await a.update("increment", { by: 4 });
    const base = a.revision;
    const atBase = a.state;
    const { revision } = await a.compact();
    await a.update("increment", { by: 1 });
    await a.close();
    const where = (...more: string[]) => target(server.url, stream, ...more);

    const rows = await runJson(["history", ...where("--to", String(revision))]);
    const parts = rows.filter((r: { kind: string }) => r.kind === "part");
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.every((r: { base: number }) => r.base === base)).toBe(true);
    for (const { revision: r } of parts) {
      const at = await runCli(["state", ...where("--model", MODEL, "--at", String(r), "--json")]);
      expect([at.code, at.stderr]).toEqual([0, ""]);
      expect(JSON.parse(at.stdout)).toEqual({ revision: r, state: atBase });
    }
    const before = await runCli(["state", ...where("--model", MODEL, "--at", String(base))]);
    expect(before.code).toBe(1);
    expect(before.stderr.trim()).toBe(
      `statesync: TRUNCATED: revision ${base} is before the retained history (the first retained revision is ${parts[0].revision})`,
    );
  });

  it("import restores a state too large for one entry as a chunked snapshot", async () => {
    const stream = uniqueStream("CHUNKBIG");
    const a = await openCounter(server.url, stream);
    for (let i = 0; i < 8; i++) await a.update("note", { text: `${i} ${"né😀".repeat(1_000)}` });
    await a.update("increment", { by: 3 });
    await a.compact();
    const expected = a.state;
    await a.close();
    const dir = await mkdtemp(join(tmpdir(), "statesync-cli-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, "big.json");
    await runJson(["export", ...target(server.url, stream, "--model", MODEL), file]);

    const restored = uniqueStream("CHUNKBIG_RESTORED");
    const where = (...more: string[]) => target(server.url, restored, ...more);
    const r = await runJson(["import", file, ...where()]);
    const rows = await runJson(["history", ...where()]);
    expect(rows[0]).toMatchObject({ kind: "part", parts: { index: 0 } });
    expect(rows.length).toBeGreaterThan(3);
    expect(rows.at(-1)).toMatchObject({
      kind: "snapshot",
      revision: r.revision,
      parts: { count: rows.length - 1 },
    });
    const { state } = await runJson(["state", ...where("--model", MODEL)]);
    expect(state).toEqual(expected);
    expect((await runJson(["verify", ...where("--model", MODEL)])).ok).toBe(true);
    const b = await openCounter(server.url, restored);
    expect(b.state).toEqual(expected);
    await b.update("increment", { by: 1 });
    expect(b.state.count).toBe(4);
    await b.close();
  });

  it("import's slices rejoin to the text, fit an entry, and never split a surrogate pair", () => {
    const text = JSON.stringify({ s: `a"\\é${"😀".repeat(5_000)}\u0001` });
    for (const t of [text, ` ${text}`]) {
      // Both alignments: one of them puts a slice's end between the halves of a pair.
      const slices = textSlices(t, 2_048);
      expect(slices.join("")).toBe(t);
      for (const slice of slices) {
        expect(Buffer.byteLength(JSON.stringify(slice))).toBeLessThanOrEqual(2_048 - 512);
        expect(slice).toBe(Buffer.from(slice, "utf8").toString("utf8")); // no lone surrogate
      }
    }
  });
});
