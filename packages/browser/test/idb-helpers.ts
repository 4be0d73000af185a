import { deleteDB, openDB } from "idb";

let counter = 0;
/** A database name no other test uses. */
export function uniqueDatabase(prefix = "test"): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2)}`;
}

/** Reads the raw value under `key` (bypassing the store). */
export async function rawGet(name: string, key: string): Promise<any> {
  const db = await openDB(name);
  try {
    return await db.get("snapshots", key);
  } finally {
    db.close();
  }
}

/** Writes a raw value under `key` (bypassing the store). */
export async function rawPut(name: string, key: string, value: unknown): Promise<void> {
  const db = await openDB(name);
  try {
    await db.put("snapshots", value, key);
  } finally {
    db.close();
  }
}

/**
 * Deletes a database. (A `blocked` event alone is no failure: Chromium fires it while a closing
 * connection finishes its last transaction; a connection that never closes times the test out.)
 */
export async function dropDatabase(name: string): Promise<void> {
  await deleteDB(name);
}
