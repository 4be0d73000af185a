/**
 * `statesync import FILE --stream NEW [--key KEY] [--model PATH]`: restores a backup file into a
 * new stream (or a new key of a shared stream). The file is checked first (JSON, schema, the
 * state's depth, checksum; with `--model`, the model's identity and schema too; then every entry
 * it becomes is encoded, `checkRestorable`), before anything is created or written.
 * A log that already holds entries is refused.
 *
 * What is written (with the core's own entry encoder): a genesis entry naming the backup's
 * model, then a snapshot entry of the backed-up state based on it (with the backup's `from`,
 * the version before the source log's last switch, as compaction writes it), each appended conditionally
 * (so a concurrent writer makes the import fail, never interleave), then the genesis is
 * truncated away. A state too large for one entry is written as a chunked snapshot instead
 * (`restore-chunked.ts`; the log is then truncated before its part 0). The restored log thus
 * has the shape of a compacted one: replicas of that model open it and start from the state, and `verify` takes the snapshot entry as its starting point
 * (it is not a replay of the genesis, whose initial state it replaces).
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import {
  encodeEntry,
  isStateSyncError,
  logModelOf,
  migrateUp,
  safeParse,
  StateSyncError,
  type JetStreamLog,
} from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { readBackupText, restoreSnapshotHeader, type Backup } from "../backup.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith } from "../options.js";
import { readOperatorFile } from "../operator-file.js";
import { printJson, printLines } from "../output.js";
import { cliClientId } from "../replica.js";
import { writeChunkedRestore } from "../restore-chunked.js";
import { withLog, withSession } from "../session.js";

const importSchema = z.object({ file: z.string().min(1), model: z.string().min(1).optional() });

/** Largest backup file read, bytes (the format's largest entry). */
const MAX_BACKUP_BYTES = 64 * 1024 * 1024;

/**
 * Reads and checks FILE (see `readBackupText`). Throws `VALIDATION` when it cannot be read, and
 * `CORRUPT_SNAPSHOT` past {@link MAX_BACKUP_BYTES}. A pipe is read (`import <(…)`, `/dev/stdin`):
 * see `readOperatorFile`.
 */
export async function readBackupFile(file: string): Promise<Backup> {
  const data = await readOperatorFile(
    file,
    MAX_BACKUP_BYTES,
    file,
    () =>
      new StateSyncError("CORRUPT_SNAPSHOT", `${file} is larger than ${MAX_BACKUP_BYTES} bytes`),
  );
  return readBackupText(data.toString("utf8"), file);
}

/**
 * With `--model`: the backup must be of this model, or of a version in its chain of predecessors
 * (docs/versions.md), and its state must pass that version's schema; a backup of an older version
 * must also migrate up to `--model`'s (so its replicas can read the restored log). Returns the
 * version of `--model`'s chain the backup is of. Throws `MODEL_MISMATCH` (another model, another
 * initial state, a version the chain lacks), `MODEL_UPGRADED` (a backup newer than `--model`),
 * `VALIDATION` (the state fails the schema, or its migration fails).
 */
function checkAgainstModel(backup: Backup, model: AnyModel): AnyModel {
  const m = backup.model;
  const header = { model: m.name, version: m.version, initialHash: m.initialHash };
  const found = logModelOf(model, header as unknown as Parameters<typeof logModelOf>[1]);
  if (found instanceof StateSyncError) {
    // (found's message speaks of a log; here it is the backup that is of another version)
    const why =
      found.code === "MODEL_UPGRADED"
        ? `the backup is newer than --model: give v${m.version} or a later version of the model`
        : found.message;
    throw new StateSyncError(
      found.code,
      `the backup is of ${m.name} v${m.version} (initial ${m.initialHash.slice(0, 12)}), --model is ${model.name} v${model.version} (initial ${model.initialHash.slice(0, 12)}): ${why}`,
      { details: found.details },
    );
  }
  const valid = safeParse(found.state, backup.state); // a refinement that throws fails it
  if (!valid.success) {
    throw new StateSyncError(
      "VALIDATION",
      `the backed-up state fails the schema of ${m.name} v${m.version}: ${valid.error.issues[0]?.message}`,
    );
  }
  if (found !== model) migrateUp(model, found, backup.state); // throws VALIDATION, naming the step
  return found;
}

/**
 * Builds and encodes, with the core's entry encoder, every entry of the restore whose content
 * comes from `backup` (the genesis; the snapshot entry, as one message and as a chunked
 * snapshot's header), so that a backup the writes would refuse is refused before the stream is
 * created (docs/cli.md: checked "before anything is sent"). Before, a state holding an own
 * `__proto__` key passed the file's checks and was refused by the encoder only after the stream
 * had been created, which was left behind empty (a hostile-input trial). Throws `VALIDATION`
 * (what `encodeEntry` throws, or a `from` not below the backup's version: `from` is the version
 * before a switch, and a switch goes up).
 */
export function checkRestorable(backup: Backup): void {
  const { name: model, version, initialHash } = backup.model;
  if (backup.from !== undefined && backup.from >= version) {
    throw new StateSyncError(
      "VALIDATION",
      `the backup's from (v${backup.from}) is not below its model version (v${version}): from is the version the log was at before it switched up to v${version}`,
      { details: { from: backup.from, version } },
    );
  }
  const client = cliClientId();
  encodeEntry({ v: 1, kind: "genesis", ts: Date.now(), client, model, version, initialHash });
  snapshotEntry(backup, Number.MAX_SAFE_INTEGER, client);
  const text = JSON.stringify(backup.state);
  encodeEntry({
    v: 2,
    ...restoreSnapshotHeader(backup, Number.MAX_SAFE_INTEGER, client),
    parts: {
      id: "0123456789abcdef",
      count: 1,
      bytes: Math.max(1, Buffer.byteLength(text, "utf8")),
      sha256: "0".repeat(64),
    },
  });
}

/** The restore's snapshot entry of `backup`'s state, based on revision `base`. */
function snapshotEntry(backup: Backup, base: number, client: string): Uint8Array {
  return encodeEntry({ v: 1, ...restoreSnapshotHeader(backup, base, client), state: backup.state });
}

/**
 * Writes the restore (see the module header) into an empty `log`; resolves to the revision of
 * the snapshot entry. Throws `PAYLOAD_TOO_LARGE` (before writing anything) when the state does
 * not fit in one entry, `VALIDATION` when the log holds entries, `CONFLICT` when another writer
 * appended meanwhile, and what appending throws.
 */
export async function writeRestore(log: JetStreamLog, backup: Backup): Promise<number> {
  const info = await log.info();
  const notEmpty = () =>
    new StateSyncError(
      "VALIDATION",
      `${log.subject} in stream ${log.stream} already holds entries (latest revision ${info.latestRevision}); import writes only into a new stream or key`,
      { details: { latest: info.latestRevision } },
    );
  if (info.latestRevision > 0) throw notEmpty();
  const client = cliClientId();
  const oneEntry =
    snapshotEntry(backup, Number.MAX_SAFE_INTEGER, client).byteLength <= info.maxEntryBytes;
  const { name: model, version, initialHash } = backup.model;
  const id = backup.checksum.slice("sha256:".length, "sha256:".length + 16);
  const genesis = encodeEntry({
    v: 1,
    kind: "genesis",
    ts: Date.now(),
    client,
    model,
    version,
    initialHash,
  });
  let base: number;
  try {
    base = (await log.appendConditional(genesis, 0, `restore-genesis-${id}`)).revision;
  } catch (e) {
    if (isStateSyncError(e, "CONFLICT")) throw notEmpty();
    throw e;
  }
  const append = async (data: Uint8Array, after: number, messageId: string) => {
    try {
      return (await log.appendConditional(data, after, messageId)).revision;
    } catch (e) {
      if (!isStateSyncError(e, "CONFLICT")) throw e;
      throw new StateSyncError(
        "CONFLICT",
        `another writer appended to ${log.subject} during the restore (after revision ${after}); the restore did not complete: delete the stream (or key) and import again`,
        { cause: e },
      );
    }
  };
  if (oneEntry) {
    const revision = await append(
      snapshotEntry(backup, base, client),
      base,
      `restore-snapshot-${id}`,
    );
    await log.truncateBefore(revision);
    return revision;
  }
  const chunked = await writeChunkedRestore(log, backup, base, client, id, append);
  await log.truncateBefore(chunked.start);
  return chunked.revision;
}

/** Adds `import` to `program`. */
export function registerImport(program: Command): void {
  addCommonOptions(
    program
      .command("import")
      .description("restore a backup file into a new stream (or a new key of a shared stream)")
      .argument("<file>", "a backup file written by statesync export")
      .option("--model <path>", "also check the backup against this model (.js/.mjs[#name])"),
  ).action(
    action(async (file: string, raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(importSchema, { file, model: raw.model });
      const path = resolve(args.file);
      const backup = await readBackupFile(path);
      const model = args.model === undefined ? undefined : await loadModel(args.model);
      if (model !== undefined) checkAgainstModel(backup, model);
      checkRestorable(backup); // before the stream is created: nothing is left behind
      const revision = await withSession(o, (s) =>
        withLog(s, (log) => writeRestore(log, backup), { create: true }),
      );
      const m = backup.model;
      if (o.json) {
        printJson({
          stream: o.stream,
          key: o.key ?? null,
          revision,
          backupRevision: backup.revision,
          model: m.name,
        });
      } else {
        printLines([
          `restored ${path} (${m.name} v${m.version}, revision ${backup.revision} of ${backup.source.stream}) into ${o.stream}${o.key ? ` key ${o.key}` : ""}: snapshot entry at revision ${revision}`,
          ...(model !== undefined && model.version > m.version
            ? [
                `the restored log is at v${m.version}; the first replica of v${model.version} switches it when it opens (upgrade "on-open", the default), or \`statesync migrate\` does (docs/versions.md)`,
              ]
            : []),
        ]);
      }
    }),
  );
}
