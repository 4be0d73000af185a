import { StateSyncError } from "./errors.js";
import {
  checkSnapshotKey,
  checkSnapshotRecord,
  shouldReplaceSnapshot,
  snapshotRecordSchema,
  type SnapshotRecord,
  type SnapshotStore,
} from "./snapshot-store.js";

/**
 * An in-process {@link SnapshotStore}. Records are stored as JSON text, so what `load` returns is
 * a fresh copy. A key that is no non-empty string, or a record that `checkSnapshotRecord`
 * refuses, is `VALIDATION`. `corrupt(key)` damages a stored record on purpose (for tests).
 */
export class MemorySnapshotStore implements SnapshotStore {
  private readonly records = new Map<string, string>();

  async load(key: string): Promise<SnapshotRecord | undefined> {
    checkSnapshotKey(key);
    return this.loadNow(key);
  }

  private loadNow(key: string): SnapshotRecord | undefined {
    const text = this.records.get(key);
    if (text === undefined) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      throw new StateSyncError("CORRUPT_SNAPSHOT", `snapshot ${key} is not valid JSON`, { cause });
    }
    const result = snapshotRecordSchema.safeParse(parsed);
    if (!result.success) {
      throw new StateSyncError("CORRUPT_SNAPSHOT", `snapshot ${key} has an invalid shape`, {
        cause: result.error,
      });
    }
    return result.data as SnapshotRecord;
  }

  async save(key: string, record: SnapshotRecord): Promise<void> {
    checkSnapshotKey(key);
    const checked = checkSnapshotRecord(record);
    let stored: SnapshotRecord | undefined;
    try {
      stored = this.loadNow(key);
    } catch {
      stored = undefined;
    }
    if (!shouldReplaceSnapshot(stored, checked)) return;
    this.records.set(key, JSON.stringify(checked));
  }

  async delete(key: string): Promise<void> {
    checkSnapshotKey(key);
    this.records.delete(key);
  }

  /** Test hook: replaces the stored text of `key` with a truncated copy. */
  corrupt(key: string): void {
    const text = this.records.get(key);
    if (text !== undefined) this.records.set(key, text.slice(0, Math.floor(text.length / 2)));
  }
}
