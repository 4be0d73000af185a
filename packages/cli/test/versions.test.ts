import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  encodeEntry,
  JetStreamLog,
  openSynchronizer,
  startNatsServer,
  type NatsServer,
} from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const MODEL_V2 = fileURLToPath(new URL("./fixtures/counter-v2.mjs", import.meta.url));
const MODEL_V2_PICKY = fileURLToPath(new URL("./fixtures/counter-v2-picky.mjs", import.meta.url));

/** The CLI with model versions (docs/versions.md): it reads across a switch and never writes one. */
describe("statesync and model versions", () => {
  const ctx = useNatsServer();
  const where = (stream: string) => target(ctx.server.url, stream);

  it("reads a version-1 log with the version-2 model without switching it", async () => {
    const stream = uniqueStream("V1");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 });
    await a.close();
    const state = await runJson(["state", ...where(stream), "--model", MODEL_V2]);
    expect(state).toEqual({ revision: 2, state: { count: 3, notes: [], tags: [] } });
    const verify = await runJson(["verify", ...where(stream), "--model", MODEL_V2]);
    expect(verify.ok).toBe(true);
    // A backup with the newer model holds the state migrated up, under that model's identity,
    // and restores as a log at version 2 (docs/cli.md, export).
    const file = path.join(ctx.dir, `${stream}.json`);
    await runJson(["export", ...where(stream), "--model", MODEL_V2, file]);
    const backup = JSON.parse(await readFile(file, "utf8"));
    expect(backup).toMatchObject({ model: { version: 2 }, state: { count: 3, tags: [] } });
    const restored = uniqueStream("V2R");
    await runJson(["import", file, ...where(restored), "--model", MODEL_V2]);
    const restoredInfo = await runJson(["info", ...where(restored)]);
    expect(restoredInfo).toMatchObject({ model: { version: 2, from: "snapshot" } });
    // Nothing was written: the log is still at version 1, revision 2.
    const info = await runJson(["info", ...where(stream)]);
    expect(info).toMatchObject({ revision: 2, model: { version: 1, from: "genesis" } });
  });

  it("import --model v2 restores a backup of v1 (its chain reads it) and refuses what v2 cannot migrate", async () => {
    const stream = uniqueStream("V1B");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 5 });
    await a.updateUnconditionally("note", { text: "poison" });
    await a.close();
    const file = path.join(ctx.dir, `${stream}-v1.json`);
    await runJson(["export", ...where(stream), "--model", MODEL, file]);
    // Before, a backup of v1 was MODEL_MISMATCH with the v2 model.
    const restored = uniqueStream("V1R");
    const r = await runCli(["import", file, ...where(restored), "--model", MODEL_V2]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/the restored log is at v1; the first replica of v2 switches it/);
    expect(await runJson(["info", ...where(restored)])).toMatchObject({ model: { version: 1 } });
    const v2Model = (await import(MODEL_V2)).default;
    const b = await openSynchronizer<any, any>({
      servers: ctx.server.url,
      stream: restored,
      model: v2Model,
      snapshots: false,
      compaction: false,
    });
    expect(b.state).toEqual({ count: 5, notes: ["poison"], tags: [] });
    await b.close();
    // A v2 whose migrate refuses the backed-up state: nothing is created.
    const refused = uniqueStream("V1P");
    const p = await runCli(["import", file, ...where(refused), "--model", MODEL_V2_PICKY]);
    expect(p.code).toBe(1);
    expect(p.stderr).toMatch(/^statesync: VALIDATION: migrating to counter v2 failed: .*poison/);
    expect((await runCli(["info", ...where(refused)])).code).not.toBe(0);
    // A backup of v2 with the v1 model: the model is older than the backup.
    const v2file = path.join(ctx.dir, `${stream}-v2.json`);
    await runJson(["export", ...where(stream), "--model", MODEL_V2, v2file]);
    const older = await runCli(["import", v2file, ...where(uniqueStream("V2O")), "--model", MODEL]);
    expect(older.code).toBe(1);
    expect(older.stderr).toMatch(/^statesync: MODEL_UPGRADED: the backup is of counter v2/);
    expect(older.stderr).toMatch(/the backup is newer than --model: give v2 or a later version/);
    expect(older.stderr).not.toMatch(/the log switched/);
  });

  it("shows a switch in history and info, and replays across it", async () => {
    const stream = uniqueStream("V2");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.close();
    const v2Model = (await import(MODEL_V2)).default;
    const b = await openSynchronizer<any, any>({
      servers: ctx.server.url,
      stream,
      model: v2Model,
      snapshots: false,
      live: false,
      compaction: false,
    }); // writes the switch on open (revision 3)
    await b.updateUnconditionally("tag", { tag: "red" }); // 4
    await b.close();

    const rows = await runJson(["history", ...where(stream)]);
    expect(rows.map((r: { kind: string }) => r.kind)).toEqual([
      "genesis",
      "update",
      "switch",
      "command",
    ]);
    expect(rows[2]).toMatchObject({ base: 2, model: { name: "counter", version: 2, from: 1 } });
    expect(rows[3]).toMatchObject({ modelVersion: 2, commands: [{ name: "tag" }] });
    const info = await runJson(["info", ...where(stream)]);
    expect(info.model).toMatchObject({ version: 2, from: "switch", revision: 3 });
    expect(await runJson(["state", ...where(stream), "--model", MODEL_V2])).toEqual({
      revision: 4,
      state: { count: 3, notes: [], tags: ["red"] },
    });
    expect(await runJson(["verify", ...where(stream), "--model", MODEL_V2])).toMatchObject({
      ok: true,
      switchesChecked: 1,
    });
  });

  it("verify checks a switch entry's state against the model's migrate of the replay", async () => {
    const stream = uniqueStream("BADSWITCH");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.close();
    const v2Model = (await import(MODEL_V2)).default;
    // A switch entry written by another program, whose state is not v1's state migrated.
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    const forged = encodeEntry({
      v: 2,
      kind: "switch",
      base: 2,
      ts: Date.now(),
      client: "forger",
      model: "counter",
      from: 1,
      version: 2,
      initialHash: v2Model.initialHash,
      state: { count: 99, notes: [], tags: [] },
    });
    await log.appendConditional(forged, 2, "forged-switch"); // 3
    await log.close();
    await nc.close();
    const r = await runCli(["verify", ...where(stream), "--model", MODEL_V2]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^statesync: CORRUPT_ENTRY: revision 3: the switch entry differs from the state replayed at its base 2, migrated: at \/count the replay has 3, the switch entry 99/,
    );
    const report = JSON.parse(
      (await runCli(["verify", ...where(stream), "--model", MODEL_V2, "--json"])).stdout,
    );
    expect(report).toMatchObject({ ok: false, switchesChecked: 1, divergence: { revision: 3 } });
  });

  it("exits 1 with MODEL_UPGRADED when the model is older than the log", async () => {
    const stream = uniqueStream("OLD");
    const a = await openCounter(ctx.server.url, stream);
    await a.close();
    const v2Model = (await import(MODEL_V2)).default;
    const b = await openSynchronizer<any, any>({
      servers: ctx.server.url,
      stream,
      model: v2Model,
      snapshots: false,
      live: false,
    });
    await b.close();
    const r = await runCli(["state", ...where(stream), "--model", MODEL]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^statesync: MODEL_UPGRADED: /);
  });

  it("migrate: --dry-run writes nothing; then one switch, a second run has nothing to do; a v1 replica stops", async () => {
    const stream = uniqueStream("MIG");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // revision 2
    const dry = await runJson(["migrate", ...where(stream), "--model", MODEL_V2, "--dry-run"]);
    expect(dry).toEqual({
      model: "counter",
      from: 1,
      to: 2,
      outcome: "would-switch",
      revision: 2,
      state: { count: 3, notes: [], tags: [] },
    });
    expect((await runJson(["info", ...where(stream)])).revision).toBe(2); // nothing written
    const done = await runCli(["migrate", ...where(stream), "--model", MODEL_V2]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/switched counter v1 → v2: switch entry at revision 3/);
    const again = await runJson(["migrate", ...where(stream), "--model", MODEL_V2]);
    expect(again).toMatchObject({ outcome: "up-to-date", revision: 3 });
    const kinds = (await runJson(["history", ...where(stream)])).map(
      (r: { kind: string }) => r.kind,
    );
    expect(kinds).toEqual(["genesis", "update", "switch"]);
    // The version-1 replica stops at the switch with MODEL_UPGRADED, still serving its state.
    await expect(a.fetchUpdates()).rejects.toMatchObject({ code: "MODEL_UPGRADED" });
    expect(a.state).toMatchObject({ count: 3 });
    await a.close();
    // An older model cannot migrate a newer log; a missing --model is a usage error.
    const old = await runCli(["migrate", ...where(stream), "--model", MODEL]);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(/^statesync: MODEL_UPGRADED: /);
    const bare = await runCli(["migrate", ...where(stream)]);
    expect(bare.code).toBe(1);
  });

  it("state --at reads up to that revision only: the old model before the switch, a revision before a bad entry", async () => {
    // Found by a fresh-eyes trial: --at replayed the whole log first, so the entry after it
    // (a switch, an unknown command) stopped it.
    const stream = uniqueStream("AT");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.close();
    expect((await runCli(["migrate", ...where(stream), "--model", MODEL_V2])).code).toBe(0); // 3
    expect(await runJson(["state", ...where(stream), "--model", MODEL, "--at", "2"])).toEqual({
      revision: 2,
      state: { count: 3, notes: [] },
    });
    const latest = await runCli(["state", ...where(stream), "--model", MODEL]);
    expect(latest.stderr).toMatch(/^statesync: MODEL_UPGRADED: /);
  });

  it("import restores a switched log with the snapshot entry's from: a command without mv reads the same on both", async () => {
    // Before, the restore's snapshot entry had no `from`: an old SDK's command (no `mv`) landing
    // after it was read as version 2's and applied there, while the original log skips it.
    const stream = uniqueStream("FROM");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 }); // 2
    await a.close();
    expect((await runCli(["migrate", ...where(stream), "--model", MODEL_V2])).code).toBe(0); // 3
    const file = path.join(ctx.dir, `${stream}.json`);
    await runJson(["export", ...where(stream), "--model", MODEL_V2, file]);
    expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({ from: 1, revision: 3 });
    const restored = uniqueStream("FROMR");
    await runJson(["import", file, ...where(restored), "--model", MODEL_V2]);
    const rows = await runJson(["history", ...where(restored)]);
    expect(rows).toMatchObject([{ kind: "snapshot", model: { version: 2, from: 1 } }]);
    // The same command, as an SDK from before model versions writes it, lands on both logs.
    const nc = await tcp(ctx.server.url);
    for (const s of [stream, restored]) {
      const log = new JetStreamLog({ connection: nc, stream: s });
      const old = { v: 1, kind: "command", ts: Date.now(), client: "old-sdk", seed: 1 } as const;
      const entry = encodeEntry({ ...old, name: "tag", args: { tag: "x" } });
      await log.appendUnconditional(entry, `old-sdk-${s}`);
      await log.close();
    }
    await nc.close();
    const original = await runJson(["state", ...where(stream), "--model", MODEL_V2]);
    const copy = await runJson(["state", ...where(restored), "--model", MODEL_V2]);
    expect(original.state).toEqual({ count: 3, notes: [], tags: [] }); // skipped: a v1 command
    expect(copy.state).toEqual(original.state);
  });

  it("migrate with a model older than the log names the log's version and latest revision", async () => {
    // Before: "the log switched to counter v2; this client runs v1: upgrade it (entry at
    // revision 1)", the genesis of a log created at version 2, whatever its revision.
    const stream = uniqueStream("MIGOLD");
    const v2Model = (await import(MODEL_V2)).default;
    const b = await openSynchronizer<any, any>({
      servers: ctx.server.url,
      stream,
      model: v2Model,
      snapshots: false,
    });
    for (const tag of ["a", "b", "c"]) await b.updateUnconditionally("tag", { tag }); // 2-4
    await b.close();
    const r = await runCli(["migrate", ...where(stream), "--model", MODEL]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      "statesync: MODEL_UPGRADED: the log is at counter v2 (latest revision 4, since its genesis entry at revision 1), newer than --model v1: migrate only switches a log to a newer version",
    );
  });
});

/**
 * `migrate --dry-run` runs every check of the switch before it would write (docs/cli.md,
 * migrate). A fresh-eyes trial: on a server with `max_payload: 65536` and a version-1 state of
 * about 90 KB, the dry run said "would switch ... (nothing written)", exit 0, and the real run
 * was refused `PAYLOAD_TOO_LARGE`, exit 1.
 */
describe("statesync migrate --dry-run on a small max_payload", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: "max_payload: 65536" });
  });
  afterAll(() => server?.stop());

  it("refuses a switch entry larger than the log accepts, as the real run does, saying it was a dry run", async () => {
    const stream = uniqueStream("MIGBIG");
    const a = await openCounter(server.url, stream);
    for (let i = 0; i < 30; i++) await a.update("note", { text: `${i} ${"p".repeat(3_000)}` });
    await a.close();
    const args = ["migrate", ...target(server.url, stream), "--model", MODEL_V2];
    const dry = await runCli([...args, "--dry-run"]);
    expect(dry.code).toBe(1);
    expect(dry.stdout).toBe("");
    expect(dry.stderr).toMatch(
      /^statesync: PAYLOAD_TOO_LARGE: cannot switch the log to counter v2 at revision 31: the switch entry is \d+ bytes; the log accepts at most \d+ \(.*\); dry run: nothing was written\n$/,
    );
    const real = await runCli(args);
    expect(real.code).toBe(1);
    expect(real.stderr).toMatch(
      /^statesync: PAYLOAD_TOO_LARGE: cannot switch the log to counter v2 at revision 31: the switch entry is \d+ bytes; the log accepts at most \d+ \(.*\); nothing was written/,
    );
    expect((await runJson(["info", ...target(server.url, stream)])).revision).toBe(31);
  });
});
