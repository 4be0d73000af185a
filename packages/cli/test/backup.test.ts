import { execFileSync } from "node:child_process";
import { symlinkSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { backupChecksum, readBackupText } from "../src/backup.js";
import {
  MODEL,
  openCounter,
  runCli,
  runJson,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/** `statesync export` and `statesync import`: back up a state, restore it into a new stream. */
describe("statesync export and import", () => {
  const ctx = useNatsServer();
  const server = () => ["--server", ctx.server.url];
  let files = 0;
  const file = () => path.join(ctx.dir, `backup-${++files}.json`);

  async function seeded(key?: string): Promise<string> {
    const stream = uniqueStream("BACKUP");
    const a = await openCounter(ctx.server.url, stream, key ? { key } : {});
    await a.update("increment", { by: 7 });
    await a.updateUnconditionally("note", { text: "kept" });
    await a.close();
    return stream;
  }

  it("exports a checksummed file and restores it: replicas of the new stream start there", async () => {
    const stream = await seeded();
    const backup = file();
    const out = await runJson([
      "export",
      ...server(),
      "--stream",
      stream,
      "--model",
      MODEL,
      backup,
    ]);
    expect(out).toMatchObject({ file: backup, revision: 3, model: "counter" });
    const doc = JSON.parse(await readFile(backup, "utf8"));
    expect(doc).toMatchObject({
      format: "statesync-backup",
      formatVersion: 1,
      source: { stream, key: null, subjectPrefix: null },
      model: { name: "counter", version: 1 },
      revision: 3,
      state: { count: 7, notes: ["kept"] },
    });
    const { checksum, ...content } = doc;
    expect(checksum).toBe(backupChecksum(content));

    const restored = uniqueStream("RESTORED");
    const r = await runCli(["import", backup, ...server(), "--stream", restored]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`into ${restored}: snapshot entry at revision 2`);

    const replica = await openCounter(ctx.server.url, restored);
    expect(replica.state).toEqual({ count: 7, notes: ["kept"] });
    await replica.update("increment", { by: 1 }); // and it is writable
    expect(replica.revision).toBe(3);
    await replica.close();
    const info = await runJson(["info", ...server(), "--stream", restored]);
    expect(info).toMatchObject({ firstRevision: 2, revision: 3, model: { from: "snapshot" } });
    const verify = await runJson(["verify", ...server(), "--stream", restored, "--model", MODEL]);
    expect(verify.ok).toBe(true);

    // An existing file is kept unless --force.
    const again = await runCli([
      "export",
      ...server(),
      "--stream",
      stream,
      "--model",
      MODEL,
      backup,
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(
      `statesync: VALIDATION: ${backup} exists; give --force to replace it`,
    );
    const forced = await runCli([
      "export",
      ...server(),
      "--stream",
      stream,
      "--model",
      MODEL,
      "--at",
      "2",
      "--force",
      backup,
    ]);
    expect(forced.code).toBe(0);
    expect(readBackupText(await readFile(backup, "utf8"), backup)).toMatchObject({
      revision: 2,
      state: { count: 7, notes: [] },
    });
  });

  it("restores into a new key of a shared stream, checked against --model", async () => {
    const stream = await seeded("app.one");
    const backup = file();
    const exported = await runCli([
      "export",
      ...server(),
      "--stream",
      stream,
      "--key",
      "app.one",
      "--model",
      MODEL,
      backup,
    ]);
    expect(exported.code).toBe(0);
    const key = ["--stream", stream, "--key", "app.two"];
    const r = await runJson(["import", backup, ...server(), ...key, "--model", MODEL]);
    expect(r).toMatchObject({ stream, key: "app.two", backupRevision: 3 });
    const replica = await openCounter(ctx.server.url, stream, { key: "app.two" });
    expect(replica.state).toEqual({ count: 7, notes: ["kept"] });
    await replica.close();
    // The model must be the backup's.
    const other = await runCli([
      "import",
      backup,
      ...server(),
      "--stream",
      stream,
      "--key",
      "app.three",
      "--model",
      `${MODEL}#otherInitial`,
    ]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^statesync: MODEL_MISMATCH: the backup is of counter v1/);
  });

  it("refuses to import into a stream or key that holds entries, writing nothing", async () => {
    const stream = await seeded();
    const backup = file();
    await runJson(["export", ...server(), "--stream", stream, "--model", MODEL, backup]);
    const r = await runCli(["import", backup, ...server(), "--stream", stream]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `statesync: VALIDATION: ${stream}.log in stream ${stream} already holds entries (latest revision 3); import writes only into a new stream or key`,
    );
    const info = await runJson(["info", ...server(), "--stream", stream]);
    expect(info.revision).toBe(3);
  });

  it("refuses a malformed file or a checksum mismatch before connecting", async () => {
    const stream = await seeded();
    const backup = file();
    await runJson(["export", ...server(), "--stream", stream, "--model", MODEL, backup]);
    const doc = JSON.parse(await readFile(backup, "utf8"));
    const target = uniqueStream("NEVER");
    // The server is unreachable: the file is refused before any connection is tried.
    const importing = (f: string) =>
      runCli(["import", f, "--server", "nats://127.0.0.1:1", "--stream", target]);

    const tampered = file();
    await writeFile(tampered, JSON.stringify({ ...doc, state: { count: 8, notes: ["kept"] } }));
    const mismatch = await importing(tampered);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toMatch(
      /^statesync: CORRUPT_SNAPSHOT: \S+ fails its checksum \(it says sha256:[0-9a-f]{64}, its content hashes to sha256:[0-9a-f]{64}\)/,
    );

    const truncated = file();
    await writeFile(truncated, (await readFile(backup, "utf8")).slice(0, 100));
    expect((await importing(truncated)).stderr).toMatch(
      /^statesync: CORRUPT_SNAPSHOT: \S+ is not JSON/,
    );

    const wrongField = file();
    await writeFile(wrongField, JSON.stringify({ ...doc, revision: -1 }));
    expect((await importing(wrongField)).stderr).toMatch(
      /^statesync: CORRUPT_SNAPSHOT: \S+ is not a statesync backup: revision /,
    );
    const other = file();
    await writeFile(other, JSON.stringify({ hello: "world" }));
    expect((await importing(other)).stderr).toMatch(/is not a statesync backup: format /);
    const missing = await importing(path.join(ctx.dir, "nope.json"));
    expect(missing.stderr).toMatch(/^statesync: VALIDATION: cannot read \S+nope\.json/);

    const nc = await tcp(ctx.server.url);
    const names: string[] = [];
    for await (const n of (await nc.jetstreamManager()).streams.names()) names.push(n);
    expect(names).not.toContain(target);
    await nc.close();
  });

  // A fresh-eyes trial: a FIFO without a writer made the read wait for good, and a device such
  // as /dev/zero is read without end (/dev/null here, harmless if it were read). Only a regular
  // file is read; the CLI exits at once.
  it.each([
    ["a FIFO", (p: string) => execFileSync("mkfifo", [p])],
    ["a character device", (p: string) => symlinkSync("/dev/null", p)],
  ])("refuses a backup file that is %s, reading nothing", async (described, make) => {
    const special = file();
    make(special);
    const r = await runCli(
      ["import", special, "--server", "nats://127.0.0.1:1", "--stream", uniqueStream("NEVER")],
      {},
      { killAfterMs: 30_000 },
    );
    expect(r).toMatchObject({ code: 1, signal: null });
    expect(r.stderr).toBe(
      `statesync: VALIDATION: cannot read ${special}: it is ${described}, not a regular file\n`,
    );
  });
});
