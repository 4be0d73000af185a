import { z } from "zod";

/**
 * The fields of the board's model versions (`board-model-v1.ts`, `board-model.ts`). Version 1
 * replays old logs with them: a change here changes what its commands accept, so it needs a new
 * model version (docs/versions.md, "What needs a new version").
 */

/** The id of a list or a card: 1 to 64 characters. */
export const idSchema = z.string().min(1).max(64);
/** The longest title, in characters (the inputs stop there). */
export const TITLE_MAX = 200;
/** A title as stored. */
export const titleSchema = z.string().trim().min(1).max(TITLE_MAX);
/**
 * A title a command sets: at most {@link TITLE_MAX} UTF-16 units, as the inputs' `maxLength`
 * counts (zod's `max` counts code points: 150 emoji passed), with a visible character (a title
 * of a zero-width space made a card that could not be seen or double-clicked: a fresh-eyes
 * trial, stop 26). Stored titles are read as before.
 */
export const newTitleSchema = titleSchema
  .refine((s) => s.length <= TITLE_MAX, `must be at most ${TITLE_MAX} characters`)
  .refine((s) => /[^\s\p{Cf}]/u.test(s), "must have a visible character");

/**
 * Ids that cannot be keys of version 2's `lists` or `cards`: an object's `__proto__` is its
 * prototype, and statesync refuses patches through `__proto__`, `constructor` or `prototype`.
 * New lists and cards cannot take them; the migration from version 1 renames those that had one.
 */
export const RESERVED_IDS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
