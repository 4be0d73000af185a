import { isStateSyncError } from "@statesync/browser";

/**
 * A line the board shows above the lists. Each says what is true now and goes away when it
 * stops being true (issue 12: "Could not addCard: not connected to NATS within 5000 ms" stayed
 * on screen after the board was live again):
 * - every failure notice goes when a later edit commits (the user went on, and it worked), or
 *   with its close button;
 * - `clears: "live"`: a failure caused by the connection also goes once the board is `live`
 *   again (it has then caught up, so the board shows what the server holds).
 */
export interface Notice {
  readonly id: number;
  readonly text: string;
  /** `"live"`: also cleared when the board is live again; `"commit"`: only by a later commit. */
  readonly clears: "live" | "commit";
}

/** What the user tried, in words, by command name. */
const DOING: Record<string, string> = {
  addList: "add the list",
  renameList: "rename the list",
  moveList: "move the list",
  deleteList: "delete the list",
  addCard: "add the card",
  renameCard: "rename the card",
  moveCard: "move the card",
  deleteCard: "delete the card",
};

let counter = 1;

/**
 * A number from one increasing sequence shared by edits and notices: an edit takes one when it
 * starts, so a commit clears only the notices shown before that edit started.
 */
export function tick(): number {
  return counter++;
}

/**
 * The notice for an edit (`command`) that failed with `error`: the connection (`UNAVAILABLE`:
 * nothing was stored; `UNKNOWN_OUTCOME`: it may have been) or a refusal (the command threw, the
 * arguments were invalid, ...), with the reason in the user's terms where statesync gives one.
 */
export function noticeForFailure(command: string, error: unknown): Notice {
  const doing = DOING[command] ?? command;
  if (isStateSyncError(error, "UNAVAILABLE")) {
    const waited = error.details.waitedMs;
    const after = typeof waited === "number" ? ` for ${Math.round(waited / 1000)} s` : "";
    return {
      id: tick(),
      text: `Could not ${doing}: the server could not be reached${after}, so it was not saved.`,
      clears: "live",
    };
  }
  if (isStateSyncError(error, "UNKNOWN_OUTCOME")) {
    return {
      id: tick(),
      text: `Could not confirm that the server stored your edit (${doing}); the board shows what it holds once it is back.`,
      clears: "live",
    };
  }
  // A queued edit refused when it was sent: the reason is its cause (what the command threw).
  const why = isStateSyncError(error, "UPDATE_REFUSED") && error.cause ? error.cause : error;
  // One line (zod's messages span several: "✖ Too big: …\n  → at title").
  const reason = (why instanceof Error ? why.message : String(why))
    .replace(/\s*✖\s*/g, " ")
    .replace(/\s*\n\s*→ at (\S+)/g, " (at $1)")
    .replace(/\s*\n\s*/g, " ")
    .trim();
  return { id: tick(), text: `Could not ${doing}: ${reason}.`, clears: "commit" };
}

/** The notices left after the board became `live` (connection failures are resolved then). */
export function afterLive(notices: readonly Notice[]): readonly Notice[] {
  const kept = notices.filter((n) => n.clears !== "live");
  return kept.length === notices.length ? notices : kept;
}

/**
 * The notices left after an edit that started at `started` (its `tick()`) committed: those shown
 * before it started are resolved (the user went on, and it worked).
 */
export function afterCommit(notices: readonly Notice[], started: number): readonly Notice[] {
  const kept = notices.filter((n) => n.id > started);
  return kept.length === notices.length ? notices : kept;
}
