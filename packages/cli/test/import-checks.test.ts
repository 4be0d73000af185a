import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { backupChecksum } from "../src/backup.js";
import {
  MODEL,
  openCounter,
  runCli,
  runJson,
  streamNames,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * `statesync import` checks a backup "before anything is sent" (docs/cli.md). A hostile-input
 * trial: a backup whose state held an own `__proto__` key (its checksum recomputed) passed the
 * file's checks and was refused by the entry encoder only after the stream had been created,
 * which was left behind empty; a backup saying `from: 99` of a v1 model was restored.
 */
describe("statesync import refuses what its entries could not hold, creating nothing", () => {
  const ctx = useNatsServer();
  const server = () => ["--server", ctx.server.url];
  let files = 0;
  const file = () => path.join(ctx.dir, `import-check-${++files}.json`);

  /** A backup of a counter stream, edited by `edit` (JSON text: keys as given), checksum fixed. */
  async function editedBackup(edit: (doc: Record<string, unknown>) => string): Promise<string> {
    const stream = uniqueStream("CHECKED");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 3 });
    await a.close();
    const backup = file();
    await runJson(["export", ...server(), "--stream", stream, "--model", MODEL, backup]);
    const { checksum: _, ...content } = JSON.parse(await readFile(backup, "utf8"));
    const text = edit(content);
    const edited = JSON.parse(text);
    const out = file();
    await writeFile(out, JSON.stringify({ ...edited, checksum: backupChecksum(edited) }));
    return out;
  }

  it("a state holding an own __proto__ key: VALIDATION, no stream created, with or without --model", async () => {
    const backup = await editedBackup((doc) =>
      JSON.stringify(doc).replace('"notes":[]', '"notes":[],"x":{"__proto__":{"polluted":1}}'),
    );
    expect(await readFile(backup, "utf8")).toContain('"__proto__"');
    for (const extra of [[], ["--model", MODEL]]) {
      const target = uniqueStream("PROTO");
      const r = await runCli(["import", backup, ...server(), "--stream", target, ...extra]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^statesync: VALIDATION: .*an object key is __proto__/);
      expect(await streamNames(ctx.server.url)).not.toContain(target);
    }
  });

  it("a from not below the backup's model version: VALIDATION, no stream created", async () => {
    for (const from of [99, 1]) {
      const backup = await editedBackup((doc) => JSON.stringify({ ...doc, from }));
      for (const extra of [[], ["--model", MODEL]]) {
        const target = uniqueStream("FROM");
        const r = await runCli(["import", backup, ...server(), "--stream", target, ...extra]);
        expect(r.code).toBe(1);
        expect(r.stderr).toBe(
          `statesync: VALIDATION: the backup's from (v${from}) is not below its model version (v1): from is the version the log was at before it switched up to v1\n`,
        );
        expect(await streamNames(ctx.server.url)).not.toContain(target);
      }
    }
  });
});
