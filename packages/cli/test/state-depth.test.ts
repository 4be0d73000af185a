import { access, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openSynchronizer, stateHash, type StateSynchronizer } from "@statesync/node";
import { backupChecksum } from "../src/backup.js";
// @ts-expect-error: a plain ES module (as operators hand models over), without declarations
import { nested, tree as treeModel } from "./fixtures/tree-model.mjs";
import { appendOlderCommand } from "../../node/test/helpers.js";
import { runCli, runJson, streamNames, uniqueStream, useNatsServer } from "./helpers.js";

const TREE = fileURLToPath(new URL("./fixtures/tree-model.mjs", import.meta.url));
const tree = treeModel as Parameters<typeof openSynchronizer<any, any>>[0]["model"];
const deep = nested as (levels: number) => unknown[];

/**
 * The CLI and a state nested deeper than `MAX_STATE_DEPTH` (255: docs/format.md, "Limits"). A
 * fresh-eyes trial: `compact` wrote a chunked snapshot no reader could load and truncated the
 * history; `export` wrote a backup `import` could never restore; `import` refused it only after
 * it had created the stream (docs/cli.md says the file is checked before anything is sent).
 */
describe("statesync and a state nested too deep", () => {
  const ctx = useNatsServer(); // max_payload 1 MiB
  const server = () => ["--server", ctx.server.url];
  let files = 0;
  const file = () => path.join(ctx.dir, `depth-${++files}.json`);

  /** A stream whose state nests `levels + 1` levels, with `bytes` of blob. */
  async function seeded(levels: number, bytes = 0): Promise<string> {
    const stream = uniqueStream("DEPTH");
    const a = await open(stream);
    if (bytes > 0) await a.updateUnconditionally("fill", { bytes });
    // An older SDK's command: this SDK's refuse a state deeper than 255 levels where applied.
    await appendOlderCommand(ctx.server.url, stream, "setDepth", { levels });
    await a.close();
    return stream;
  }
  const open = (stream: string): Promise<StateSynchronizer<any, any>> =>
    openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: tree,
      snapshots: false,
      compaction: false,
    });

  it("compact refuses a state larger than max_payload and too deep: exit 1, the log is kept", async () => {
    const stream = await seeded(300, 1_200_000);
    const before = await runJson(["info", ...server(), "--stream", stream]);
    const r = await runCli(["compact", ...server(), "--stream", stream, "--model", TREE]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^statesync: VALIDATION: not compacting at revision 3: .*deeper than 255 levels/,
    );
    const after = await runJson(["info", ...server(), "--stream", stream]);
    expect(after).toMatchObject({ firstRevision: before.firstRevision, revision: before.revision });
    const late = await open(stream);
    expect(late.revision).toBe(3);
    await late.close();
  });

  it("migrate --dry-run refuses a switch too deep to carry, as migrate does", async () => {
    // A fresh-eyes trial found the dry run skipping the switch's checks (its size, here its depth).
    const stream = await seeded(300);
    const args = ["migrate", ...server(), "--stream", stream, "--model", `${TREE}#treeV2`];
    const dry = await runCli([...args, "--dry-run"]);
    expect(dry.code).toBe(1);
    expect(dry.stderr).toMatch(
      /^statesync: VALIDATION: cannot switch the log to tree v2 at revision 2: .*deeper than 255 levels.*; dry run: nothing was written\n$/,
    );
    const real = await runCli(args);
    expect(real.code).toBe(1);
    expect(real.stderr).toMatch(
      /^statesync: VALIDATION: cannot switch the log to tree v2 at revision 2: .*deeper than 255 levels/,
    );
    expect((await runJson(["info", ...server(), "--stream", stream])).revision).toBe(2);
  });

  it("export refuses a state import could not restore: exit 1, no file", async () => {
    const stream = await seeded(300);
    const backup = file();
    const r = await runCli(["export", ...server(), "--stream", stream, "--model", TREE, backup]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^statesync: VALIDATION: the state at revision 2 nests arrays and objects deeper than 255 levels/,
    );
    await expect(access(backup)).rejects.toThrow();
    // One of 255 levels is exported, and restored.
    const edge = await seeded(254, 1_200_000);
    const ok = file();
    await runJson(["export", ...server(), "--stream", edge, "--model", TREE, ok]);
    const restored = uniqueStream("EDGE");
    const imported = await runCli(["import", ok, ...server(), "--stream", restored]);
    expect(imported.code).toBe(0);
    const [a, b] = await Promise.all([open(edge), open(restored)]);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), b.close()]);
  });

  it("import checks the state's depth before it creates or writes anything", async () => {
    const stream = await seeded(3);
    const shallow = file();
    await runJson(["export", ...server(), "--stream", stream, "--model", TREE, shallow]);
    const { checksum: _, ...content } = JSON.parse(await readFile(shallow, "utf8"));
    const target = uniqueStream("NEVER");
    const importing = (f: string) => runCli(["import", f, ...server(), "--stream", target]);

    // A file whose checksum is right: only its depth is wrong.
    const tooDeep = { ...content, state: { tree: deep(300), blob: "" } };
    const deepFile = file();
    await writeFile(deepFile, JSON.stringify({ ...tooDeep, checksum: backupChecksum(tooDeep) }));
    const r = await importing(deepFile);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^statesync: VALIDATION: the state in \S+ nests arrays and objects deeper than 255 levels/,
    );
    // 200,000 levels: no stack overflow on the way (the checksum's canonical JSON recurses).
    const hostile = file();
    const levels = 200_000;
    await writeFile(
      hostile,
      JSON.stringify({ ...content, state: "DEEP", checksum: `sha256:${"0".repeat(64)}` }).replace(
        '"DEEP"',
        `{"tree":${"[".repeat(levels)}${"]".repeat(levels)},"blob":""}`,
      ),
    );
    const h = await importing(hostile);
    expect(h.code).toBe(1);
    expect(h.stderr).toMatch(/^statesync: VALIDATION: the state in \S+ nests arrays and objects/);
    expect(await streamNames(ctx.server.url)).not.toContain(target);
  });
  it("state prints a state nested 20,000 levels deep, as --json and as text on one line (a fresh-eyes trial: INTERNAL RangeError)", async () => {
    const stream = await seeded(20_000);
    const json = await runJson(["state", ...server(), "--stream", stream, "--model", TREE]);
    expect(json.revision).toBe(2);
    expect(json.state.blob).toBe("");
    let levels = 1; // nested(20_000): arrays 20,000 deep, each holding the next, the last empty
    for (let v = json.state.tree; v.length > 0; v = v[0]) levels += 1;
    expect(levels).toBe(20_000);
    // Indented, it would grow with the square of the depth (about 800 MB here): one line.
    const text = await runCli(["state", ...server(), "--stream", stream, "--model", TREE]);
    expect([text.code, text.stderr]).toEqual([
      0,
      "statesync: the state nests deeper than 1000 levels: printed on one line, not indented\n",
    ]);
    expect(text.stdout).toBe(`{"tree":${"[".repeat(20_000)}${"]".repeat(20_000)},"blob":""}\n`);
    // A shallow state stays indented.
    const shallow = await seeded(3);
    const small = await runCli(["state", ...server(), "--stream", shallow, "--model", TREE]);
    expect(small.stdout).toBe('{\n  "tree": [\n    [\n      []\n    ]\n  ],\n  "blob": ""\n}\n');
  });
});
