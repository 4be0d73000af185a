/**
 * The backup file of `statesync export` / `import`: one JSON document holding a state, the
 * revision it was read at, the model that wrote it, where it came from and when, and a SHA-256
 * checksum of all of that in canonical JSON (sorted keys, core's `canonicalJson`), so a file
 * changed or cut short is refused before anything is written.
 *
 * ```json
 * { "format": "statesync-backup", "formatVersion": 1, "created": "2026-11-30T14:00:00.000Z",
 *   "source": { "stream": "COUNTER", "key": null, "subjectPrefix": null },
 *   "model": { "name": "counter", "version": 1, "initialHash": "3b1f…" },
 *   "revision": 42, "state": { … }, "checksum": "sha256:9c4e…" }
 * ```
 * A backup of a log that switched model versions also holds `"from"`: the version before the
 * switch (an older CLI refuses such a file rather than restore it without).
 */
import { createHash } from "node:crypto";
import {
  canonicalJson,
  findJsonProblem,
  MAX_STATE_DEPTH,
  nestedDeeperThan,
  StateSyncError,
} from "@statesync/node";
import { z } from "zod";
import { issueText } from "./zod-wording.js";

/** The format name in every backup file. */
export const BACKUP_FORMAT = "statesync-backup";
/** The version of the backup format this CLI writes and reads. */
export const BACKUP_FORMAT_VERSION = 1;

const modelIdentitySchema = z.strictObject({
  name: z.string().min(1).max(256),
  version: z.number().int().nonnegative(),
  initialHash: z.string().regex(/^[0-9a-f]{64}$/),
});

const contentSchema = z.strictObject({
  format: z.literal(BACKUP_FORMAT),
  formatVersion: z.literal(BACKUP_FORMAT_VERSION),
  created: z.iso.datetime(),
  source: z.strictObject({
    stream: z.string().min(1),
    key: z.string().nullable(),
    subjectPrefix: z.string().nullable(),
  }),
  model: modelIdentitySchema,
  /**
   * The version the log was at before its last switch, when it switched (a snapshot entry's
   * `from`, docs/format.md): the restore's snapshot entry carries it, so that a command written
   * without `mv` reads the same on the restored log as on the original. Absent: none.
   */
  from: z.number().int().nonnegative().optional(),
  revision: z.number().int().nonnegative(),
  state: z.unknown().refine((v) => v !== undefined, "is missing"),
});

/** A backup file's schema (checksum included). */
export const backupSchema = contentSchema.extend({
  checksum: z.string().regex(/^sha256:[0-9a-f]{64}$/),
});

/** What a backup holds, without its checksum. */
export type BackupContent = z.output<typeof contentSchema>;
/** A backup file. */
export type Backup = z.output<typeof backupSchema>;

/** `sha256:<hex>` of the canonical JSON of `content`. */
export function backupChecksum(content: BackupContent): string {
  return `sha256:${createHash("sha256").update(canonicalJson(content)).digest("hex")}`;
}

/** The file text of a backup of `content`: pretty JSON with its checksum, ending in a newline. */
export function writeBackupText(content: BackupContent): string {
  const problem = findJsonProblem(content.state, MAX_STATE_DEPTH);
  if (problem?.tooDeep) throw tooDeep(`the state at revision ${content.revision}`);
  if (problem !== undefined) {
    throw new StateSyncError(
      "VALIDATION",
      `the state cannot be backed up: ${problem.path}: ${problem.message}`,
    );
  }
  const backup: Backup = { ...content, checksum: backupChecksum(content) };
  return `${JSON.stringify(backup, null, 2)}\n`;
}

/**
 * The `VALIDATION` error of a state nested deeper than `MAX_STATE_DEPTH`: its snapshot entry
 * would be refused by every reader, so export writes no backup of it and import restores none
 * (docs/cli.md).
 */
function tooDeep(what: string): StateSyncError {
  return new StateSyncError(
    "VALIDATION",
    `${what} nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels, more than a log entry may hold: a restore could not write it (docs/format.md, "Limits")`,
    { details: { maxDepth: MAX_STATE_DEPTH } },
  );
}

/**
 * Parses and checks a backup file's text: JSON, the schema, the state's depth, then the checksum.
 * Throws `CORRUPT_SNAPSHOT` naming what is wrong (not JSON, a field, a checksum mismatch), and
 * `VALIDATION` for a state nested deeper than `MAX_STATE_DEPTH`, which no log could hold.
 */
export function readBackupText(text: string, file: string): Backup {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new StateSyncError(
      "CORRUPT_SNAPSHOT",
      `${file} is not JSON: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  const parsed = backupSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new StateSyncError(
      "CORRUPT_SNAPSHOT",
      `${file} is not a statesync backup: ${issue.path.join(".") || "the document"} ${issueText(issue)}`,
      { cause: parsed.error },
    );
  }
  const { checksum, ...content } = parsed.data;
  // Before the checksum, whose canonical JSON recurses: a state thousands of levels deep would
  // overflow the stack there. No log could hold such a state in any case.
  if (nestedDeeperThan(content.state, MAX_STATE_DEPTH)) throw tooDeep(`the state in ${file}`);
  const actual = backupChecksum(content);
  if (actual !== checksum) {
    throw new StateSyncError(
      "CORRUPT_SNAPSHOT",
      `${file} fails its checksum (it says ${checksum}, its content hashes to ${actual}): it was changed or damaged`,
      { details: { expected: checksum, actual } },
    );
  }
  return parsed.data;
}

/**
 * The fields a restore's snapshot entry shares, one-message or chunked: time, client, `base`
 * (the genesis's revision), the backup's model, and `from` as a compaction's snapshot entry
 * writes it (the version before the log's last switch).
 */
export function restoreSnapshotHeader(backup: Backup, base: number, client: string) {
  const { name: model, version, initialHash } = backup.model;
  return {
    kind: "snapshot" as const,
    ts: Date.now(),
    client,
    base,
    model,
    version,
    initialHash,
    ...(backup.from !== undefined ? { from: backup.from } : {}),
  };
}
