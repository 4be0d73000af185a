import { execFileSync, spawn } from "node:child_process";
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

  // A named file may be a pipe on purpose (`import <(ssh host cat b.json)`, /dev/stdin): it is
  // read as cat reads it. A device without end is refused past the largest backup instead of
  // being read until memory runs out (a fresh-eyes trial).
  it("imports a backup from a FIFO; refuses /dev/zero past the largest backup", async () => {
    const stream = await seeded();
    const backup = file();
    await runJson(["export", ...server(), "--stream", stream, "--model", MODEL, backup]);
    const fifo = file();
    execFileSync("mkfifo", [fifo]);
    const writer = spawn("sh", ["-c", 'cat "$0" > "$1"', backup, fifo], { stdio: "ignore" });
    const target = uniqueStream("FROM_FIFO");
    const r = await runCli(
      ["import", fifo, ...server(), "--stream", target],
      {},
      { killAfterMs: 60_000 },
    );
    writer.kill();
    expect([r.code, r.stderr]).toEqual([0, ""]);
    const a = await openCounter(ctx.server.url, stream);
    const b = await openCounter(ctx.server.url, target);
    expect(b.state).toEqual(a.state);
    await Promise.all([a.close(), b.close()]);

    const endless = await runCli(
      ["import", "/dev/zero", "--server", "nats://127.0.0.1:1", "--stream", uniqueStream("NEVER")],
      {},
      { killAfterMs: 60_000 },
    );
    expect(endless).toMatchObject({ code: 1, signal: null });
    expect(endless.stderr).toBe(
      `statesync: CORRUPT_SNAPSHOT: /dev/zero is larger than ${64 * 1024 * 1024} bytes\n`,
    );
  });
});
