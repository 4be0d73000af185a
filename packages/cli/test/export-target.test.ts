import { execFileSync } from "node:child_process";
import { lstat, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readBackupText } from "../src/backup.js";
import { MODEL, openCounter, runCli, target, uniqueStream, useNatsServer } from "./helpers.js";

/**
 * Where `export` writes: `--force` replaces a regular file only, and `-` is standard output. A
 * fresh-eyes trial found `--force` renaming its temporary file over a symbolic link, a FIFO, a
 * device node (as root, /dev/null became a regular file), and `-` writing a file named `-`.
 */
describe("statesync export FILE", () => {
  const ctx = useNatsServer();
  const stream = uniqueStream("EXPORTTO");

  beforeAll(async () => {
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 4 });
    await a.close();
  });

  const exportTo = (file: string, ...more: string[]) =>
    runCli(["export", ...target(ctx.server.url, stream, "--model", MODEL, ...more), file]);

  it("--force refuses what is not a regular file, and changes nothing", async () => {
    const dir = path.join(ctx.dir, "special");
    await mkdir(dir);
    const real = path.join(dir, "real.txt");
    await writeFile(real, "target of the link\n");
    const link = path.join(dir, "link.json");
    await symlink(real, link);
    const fifo = path.join(dir, "fifo.json");
    execFileSync("mkfifo", [fifo]);
    const folder = path.join(dir, "folder.json");
    await mkdir(folder);
    // No device node here: run as root on a build without the check, it would be replaced.

    for (const [file, kind] of [
      [link, "a symbolic link"],
      [fifo, "a FIFO"],
      [folder, "a directory"],
    ] as const) {
      const r = await exportTo(file, "--force");
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toBe(
        `statesync: VALIDATION: ${file} is ${kind}, not a regular file: --force replaces only a regular file; nothing written\n`,
      );
    }
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(real, "utf8")).toBe("target of the link\n");
    expect((await lstat(fifo)).isFIFO()).toBe(true);
    expect((await lstat(folder)).isDirectory()).toBe(true);

    // A regular file is still replaced.
    const plain = path.join(dir, "plain.json");
    await writeFile(plain, "old");
    expect((await exportTo(plain, "--force")).code).toBe(0);
    expect(readBackupText(await readFile(plain, "utf8"), plain).revision).toBe(2);
  });

  it("- writes the backup to standard output, the summary to stderr", async () => {
    const r = await exportTo("-");
    expect(r.code, r.stderr).toBe(0);
    expect(readBackupText(r.stdout, "-").state).toEqual({ count: 4, notes: [] });
    expect(r.stderr).toBe(`statesync: exported revision 2 of ${stream} to standard output\n`);
    await expect(lstat(path.resolve("-"))).rejects.toMatchObject({ code: "ENOENT" });

    const json = await exportTo("-", "--json");
    expect(readBackupText(json.stdout, "-").revision).toBe(2);
    expect(JSON.parse(json.stderr)).toMatchObject({ file: "-", revision: 2 });
  });
});
