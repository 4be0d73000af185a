/**
 * `statesync export --model PATH [--at N] [--force] FILE`: writes the state at the latest (or a
 * retained) revision into a self-checking backup file (see `backup.ts`): state, revision, model
 * identity, source, time and checksum. The state must pass the model's schema and nest at most
 * `MAX_STATE_DEPTH` levels (a restore writes it as a snapshot entry, which replicas would refuse
 * otherwise): a state import could not restore is refused, `VALIDATION`, and no file is written. The file is written to a
 * temporary name and renamed, and an existing FILE is kept unless `--force`, which replaces a
 * regular file only: a symbolic link (`/dev/stdout`), a FIFO, a device node or a directory is
 * refused, nothing written (the rename used to replace them: as root, `/dev/null` became a
 * regular file; a fresh-eyes trial). FILE `-` is standard output: the backup alone goes there,
 * the summary to stderr.
 */
import { link, lstat, rename, rm, writeFile } from "node:fs/promises";
import type { Stats } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { safeParse, StateSyncError, type JetStreamLog } from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  writeBackupText,
  type BackupContent,
} from "../backup.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith, revisionSchema } from "../options.js";
import { jsonText } from "../json-text.js";
import { printJson, printLines, printNotice } from "../output.js";
import { readLogVersion, type LogVersion } from "../log-version.js";
import { withLog, withSession } from "../session.js";
import { withSameHistory } from "../same-history.js";
import { MODEL_OPTION, readStateOf } from "./state.js";

const exportSchema = z.object({
  model: z.string({ error: "PATH is required (a .js/.mjs module exporting the model)" }),
  at: revisionSchema.optional(),
  file: z.string().min(1, "FILE is required"),
  force: z.boolean().optional(),
});

/** What a file that is not a regular file is, for the refusal of `--force`. */
function kindOf(stats: Stats): string {
  if (stats.isSymbolicLink()) return "a symbolic link";
  if (stats.isDirectory()) return "a directory";
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isSocket()) return "a socket";
  return "not a file";
}

/** Refuses an existing `path` that is not a regular file (it is never followed: lstat). */
async function assertReplaceable(path: string): Promise<void> {
  const stats = await lstat(path).catch((cause: NodeJS.ErrnoException) => {
    if (cause.code === "ENOENT") return undefined;
    throw new StateSyncError("VALIDATION", `cannot write ${path}: ${cause.code ?? cause.message}`, {
      cause,
    });
  });
  if (stats === undefined || stats.isFile()) return;
  throw new StateSyncError(
    "VALIDATION",
    `${path} is ${kindOf(stats)}, not a regular file: --force replaces only a regular file; nothing written`,
  );
}

/**
 * Writes `text` to `path` through a temporary file; refuses an existing `path` unless `force`,
 * and with it one that is not a regular file.
 */
async function writeNew(path: string, text: string, force: boolean): Promise<void> {
  if (force) await assertReplaceable(path);
  const temporary = `${path}.${process.pid}.tmp`;
  // A missing folder or no permission is the caller's to fix: VALIDATION naming FILE (it came
  // out as UNAVAILABLE with the temporary name, found by a fresh-eyes trial).
  await writeFile(temporary, text, { flag: "wx" }).catch((cause: NodeJS.ErrnoException) => {
    throw new StateSyncError("VALIDATION", `cannot write ${path}: ${cause.code ?? cause.message}`, {
      cause,
    });
  });
  try {
    if (force) {
      await rename(temporary, path);
      return;
    }
    await link(temporary, path).catch((cause: NodeJS.ErrnoException) => {
      throw new StateSyncError(
        "VALIDATION",
        cause.code === "EEXIST"
          ? `${path} exists; give --force to replace it`
          : `cannot write ${path}: ${cause.message}`,
        { cause },
      );
    });
  } finally {
    await rm(temporary, { force: true });
  }
}

/**
 * The version before the last switch of a log whose state at some revision is backed up under
 * model version `version`, with `at` the log's version there: the log's own `from`, or, when the
 * model is newer than the log (the backup holds the state migrated up, like a switch would),
 * the log's version itself.
 */
function switchedFrom(version: number, at: LogVersion | undefined): number | undefined {
  if (at === undefined) return undefined;
  return version > at.version ? at.version : at.from;
}

/** What a backup holds of the log: the state, its revision and the version before a switch. */
export interface BackupSource {
  readonly revision: number;
  readonly state: unknown;
  readonly from: number | undefined;
}

/**
 * The state at `at` (default the latest) of `log` and the log's version as of its revision, read
 * from one retained history (`withSameHistory`): a compaction landing between the two reads
 * removed the entries the version is read from, and the backup of a switched log lost `from`.
 * `readAt` reads the state (`readStateOf`; a test puts a compaction after it). Throws what
 * reading throws, and `TRUNCATED` when the log is truncated during every attempt.
 */
export async function readBackupSource(
  log: JetStreamLog,
  model: AnyModel,
  at: number | undefined,
  readAt: typeof readStateOf = readStateOf,
): Promise<BackupSource> {
  return withSameHistory(log, async () => {
    const read = await readAt(log, model, at);
    const version = await readLogVersion(log, read.revision);
    return { ...read, from: switchedFrom(model.version, version) };
  });
}

/** Adds `export` to `program`. */
export function registerExport(program: Command): void {
  addCommonOptions(
    program
      .command("export")
      .description("back up the state into a self-checking JSON file")
      .argument("<file>", "the backup file to write; - for standard output")
      .option(...MODEL_OPTION)
      .option("--at <revision>", "a retained revision (default: the latest)")
      .option("--force", "replace FILE if it is a regular file that exists"),
  ).action(
    action(async (file: string, raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(exportSchema, { ...raw, file });
      const model = await loadModel(args.model);
      const { revision, state, from } = await withSession(o, (s) =>
        withLog(s, (log) => readBackupSource(log, model, args.at)),
      );
      const valid = safeParse(model.state, state); // a refinement that throws fails it
      if (!valid.success) {
        throw new StateSyncError(
          "VALIDATION",
          `the state at revision ${revision} fails the model's schema; a restore could not use it: ${valid.error.issues[0]?.message}`,
        );
      }
      const toStdout = args.file === "-";
      const path = toStdout ? "-" : resolve(args.file);
      const text = writeBackupText({
        format: BACKUP_FORMAT,
        formatVersion: BACKUP_FORMAT_VERSION,
        created: new Date().toISOString(),
        source: { stream: o.stream, key: o.key ?? null, subjectPrefix: o.subjectPrefix ?? null },
        model: { name: model.name, version: model.version, initialHash: model.initialHash },
        ...(from !== undefined ? { from } : {}),
        revision,
        state: state as BackupContent["state"],
      });
      const bytes = Buffer.byteLength(text);
      if (toStdout) {
        // stdout holds the backup alone (each line made visible: still the same JSON values, so
        // the checksum holds), the summary goes to stderr.
        printLines(text.trimEnd().split("\n"));
        if (o.json) printNotice(jsonText({ file: "-", revision, bytes, model: model.name }));
        else
          printNotice(`statesync: exported revision ${revision} of ${o.stream} to standard output`);
        return;
      }
      await writeNew(path, text, args.force ?? false);
      if (o.json) printJson({ file: path, revision, bytes, model: model.name });
      else printLines([`exported revision ${revision} of ${o.stream} to ${path} (${bytes} bytes)`]);
    }),
  );
}
