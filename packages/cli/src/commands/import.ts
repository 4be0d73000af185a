/**
 * `statesync import FILE --stream NEW [--key KEY] [--model PATH]`: restores a backup file into a
 * new stream (or a new key of a shared stream). The file is checked first (JSON, schema,
 * checksum; with `--model`, the model's identity and schema too), before anything is written.
 * A log that already holds entries is refused, and so is a state too large for one entry
 * (`PAYLOAD_TOO_LARGE`, checked before the stream is created: import writes no chunked snapshot).
 *
 * What is written (with the core's own entry encoder): a genesis entry naming the backup's
 * model, then a snapshot entry of the backed-up state based on it (with the backup's `from`,
 * the version before the source log's last switch, as compaction writes it), each appended conditionally
 * (so a concurrent writer makes the import fail, never interleave), then the genesis is
 * truncated away. The restored log thus has the shape of a compacted one: replicas of that model
 * open it and start from the state, and `verify` takes the snapshot entry as its starting point
 * (it is not a replay of the genesis, whose initial state it replaces).
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import {
  encodeEntry,
  HEADER_ALLOWANCE_BYTES,
  isStateSyncError,
  StateSyncError,
  type JetStreamLog,
} from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { readBackupText, type Backup } from "../backup.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith } from "../options.js";
import { printJson, printLines } from "../output.js";
import { cliClientId } from "../replica.js";
import { withLog, withSession, type Session } from "../session.js";

const importSchema = z.object({ file: z.string().min(1), model: z.string().min(1).optional() });

/** Largest backup file read, bytes (the format's largest entry). */
const MAX_BACKUP_BYTES = 64 * 1024 * 1024;

/** Reads and checks FILE (see `readBackupText`). Throws `VALIDATION` when it cannot be read. */
export async function readBackupFile(file: string): Promise<Backup> {
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch (cause) {
    throw new StateSyncError("VALIDATION", `cannot read ${file}: ${(cause as Error).message}`, {
      cause,
    });
  }
  if (data.byteLength > MAX_BACKUP_BYTES) {
    throw new StateSyncError(
      "CORRUPT_SNAPSHOT",
      `${file} is larger than ${MAX_BACKUP_BYTES} bytes`,
    );
  }
  return readBackupText(data.toString("utf8"), file);
}

/** With `--model`: the backup must be of this model and its state must pass the schema. */
function checkAgainstModel(backup: Backup, model: AnyModel): void {
  const m = backup.model;
  if (m.name !== model.name || m.version !== model.version || m.initialHash !== model.initialHash) {
    throw new StateSyncError(
      "MODEL_MISMATCH",
      `the backup is of ${m.name} v${m.version} (initial ${m.initialHash.slice(0, 12)}), --model is ${model.name} v${model.version} (initial ${model.initialHash.slice(0, 12)})`,
    );
  }
  const valid = model.state.safeParse(backup.state);
  if (!valid.success) {
    throw new StateSyncError(
      "VALIDATION",
      `the backed-up state fails the model's schema: ${valid.error.issues[0]?.message}`,
    );
  }
}

/** The restore's snapshot entry of `backup`'s state, based on revision `base`. */
function snapshotEntry(backup: Backup, base: number, client: string): Uint8Array {
  const { name: model, version, initialHash } = backup.model;
  return encodeEntry({
    v: 1,
    kind: "snapshot",
    ts: Date.now(),
    client,
    base,
    model,
    version,
    initialHash,
    state: backup.state,
    // As a compaction's snapshot entry does: the version before the log's last switch.
    ...(backup.from !== undefined ? { from: backup.from } : {}),
  });
}

/**
 * Throws `PAYLOAD_TOO_LARGE` when the restore's snapshot entry (`entry`) is larger than the
 * largest entry the log accepts (`maxEntryBytes`): import writes the state as one entry (not as
 * a chunked snapshot, which only a compaction writes), so nothing is written then.
 */
function checkEntrySize(entry: Uint8Array, maxEntryBytes: number): void {
  if (entry.byteLength <= maxEntryBytes) return;
  throw new StateSyncError(
    "PAYLOAD_TOO_LARGE",
    `the backed-up state makes a snapshot entry of ${entry.byteLength} bytes, larger than the ${maxEntryBytes} bytes an entry may have on this server and stream (its max_payload, or the stream's max_msg_size, less ${HEADER_ALLOWANCE_BYTES} for headers); import writes the state as one entry: raise the server's max_payload (nats-server allows up to 64 MB) and import again. Nothing was written`,
    { details: { bytes: entry.byteLength, maxEntryBytes } },
  );
}

/**
 * Before the log is opened (opening creates the stream): `PAYLOAD_TOO_LARGE` when the
 * restore's snapshot entry exceeds the server's `max_payload` (or the `max_msg_size` of an
 * existing stream, a shared one), less the headers' allowance, as the log would refuse it.
 */
async function checkFits(s: Session, backup: Backup): Promise<void> {
  const payload = s.nc.info?.max_payload ?? 1024 * 1024;
  let maxMsgSize = -1;
  try {
    const jsm = await s.nc.jetstreamManager({ timeout: s.options.timeout, checkAPI: false });
    maxMsgSize = (await jsm.streams.info(s.layout.stream)).config.max_msg_size ?? -1;
  } catch {
    // No such stream yet (import creates it), or not readable: the log's own check decides.
  }
  const limit = maxMsgSize > 0 ? Math.min(payload, maxMsgSize) : payload;
  const entry = snapshotEntry(backup, Number.MAX_SAFE_INTEGER, cliClientId());
  checkEntrySize(entry, Math.max(0, limit - HEADER_ALLOWANCE_BYTES));
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
  checkEntrySize(snapshotEntry(backup, Number.MAX_SAFE_INTEGER, client), info.maxEntryBytes);
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
  const snapshot = snapshotEntry(backup, base, client);
  let revision: number;
  try {
    revision = (await log.appendConditional(snapshot, base, `restore-snapshot-${id}`)).revision;
  } catch (e) {
    if (!isStateSyncError(e, "CONFLICT")) throw e;
    throw new StateSyncError(
      "CONFLICT",
      `another writer appended to ${log.subject} right after the restore's genesis entry (revision ${base}); the restore did not complete: delete the stream (or key) and import again`,
      { cause: e },
    );
  }
  await log.truncateBefore(revision);
  return revision;
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
      if (args.model !== undefined) checkAgainstModel(backup, await loadModel(args.model));
      const revision = await withSession(o, async (s) => {
        await checkFits(s, backup);
        return withLog(s, (log) => writeRestore(log, backup), { create: true });
      });
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
        ]);
      }
    }),
  );
}
