/**
 * What the CLI prints is safe for a terminal: text from the log (client ids, command names and
 * arguments, patch paths, model names, message ids, state values, error messages quoting them)
 * is written by anyone who may publish on the subject, and the envelope accepts any string
 * there. A terminal acts on control characters (an escape sequence can recolour, move the
 * cursor, set the window title, or worse) and reorders text around bidi controls, so every line
 * the CLI prints goes through {@link visible} first (found by a fresh-eyes trial:
 * `history | cat -v` showed `^[[31mRED^[[0m^G` in the CLIENT column).
 */

// C0 (newline and tab too: one printed line is one line), DEL, C1, the bidi controls (ALM, LRM,
// RLM, LRE..RLO, LRI..PDI) and the line and paragraph separators.
const UNSAFE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/**
 * `text` with each control character written as a JSON-style escape (`ESC` → `\u001b`,
 * `U+202E` → `\u202e`), so it shows instead of acting. Backslashes are left as they are, so
 * applying it twice changes nothing, and one line of JSON stays valid JSON of the same value
 * (inside a string the escape means the character; outside strings there is none).
 */
export function visible(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
