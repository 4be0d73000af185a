import { isStateSyncError } from "@statesync/browser";
import { useCallback, useEffect, useState } from "react";
import { afterCommit, afterLive, noticeForFailure, tick, type Notice } from "./notices.js";
import type { BoardSync } from "./open-board.js";
import type { RunCommand } from "./run-command.js";

/** What {@link useEdits} gives the board. */
export interface Edits {
  /** Runs a command as a conditional update; a failure becomes a notice. */
  readonly run: RunCommand;
  /** The notices to show now, oldest first. */
  readonly notices: readonly Notice[];
  /** Removes one notice (its close button). */
  readonly dismiss: (id: number) => void;
}

/**
 * The board's edits and their notices (see `notices.ts`): an edit is queued and shows at once
 * (offline too); one the server refused when it was sent shows why (the `"refused"` event, so
 * also after a reload), until a later edit commits or it is dismissed.
 */
export function useEdits(sync: BoardSync): Edits {
  const [notices, setNotices] = useState<readonly Notice[]>([]);
  useEffect(() => {
    const clear = () => {
      if (sync.status === "live") setNotices(afterLive);
    };
    clear();
    const stops = [
      sync.on("status", clear),
      sync.on("refused", (error, update) => {
        const notice = noticeForFailure(update.command ?? "edit", error);
        setNotices((shown) => [...shown, notice]);
      }),
    ];
    return () => stops.forEach((stop) => stop());
  }, [sync]);
  const run = useCallback<RunCommand>(
    (command, args) => {
      const started = tick();
      sync.update(command, args).then(
        () => setNotices((shown) => afterCommit(shown, started)),
        (error: unknown) => {
          if (isStateSyncError(error, "UPDATE_REFUSED")) return; // shown by the event above
          // The board stopped (its stream was replaced): the edit stays stored, and the page
          // says to reload (App); "Could not" would say it was lost (a trial).
          if (isStateSyncError(error, "LOG_REPLACED")) return;
          const notice = noticeForFailure(command, error);
          setNotices((shown) => [...shown, notice]);
        },
      );
    },
    [sync],
  );
  const dismiss = useCallback((id: number) => {
    setNotices((shown) => shown.filter((n) => n.id !== id));
  }, []);
  return { run, notices, dismiss };
}
