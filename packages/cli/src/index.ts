/**
 * `@statesync/cli`: the `statesync` command for operators (bin `statesync`), and the parts a
 * script may reuse: the program itself and the backup file format.
 */
export { createProgram, main, CLI_VERSION } from "./program.js";
export {
  backupSchema,
  backupChecksum,
  readBackupText,
  writeBackupText,
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  type Backup,
  type BackupContent,
} from "./backup.js";
export { loadModel, parseModelSpec, type AnyModel } from "./model-file.js";
export type { EntryRow } from "./entries.js";
export type { InfoReport } from "./commands/info.js";
export type { VerifyReport, VerifyResult, Divergence } from "./commands/verify.js";
