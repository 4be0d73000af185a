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
  /** How many edits have not been answered yet (sent, or waiting for the server). */
  readonly unanswered: number;
  /** Removes one notice (its close button). */
  readonly dismiss: (id: number) => void;
}

/**
 * The board's edits and their notices (see `notices.ts`): a failed edit shows why; a connection
 * failure's notice goes once the board is `live` again, a refusal's once a later edit commits.
 */
export function useEdits(sync: BoardSync): Edits {
  const [notices, setNotices] = useState<readonly Notice[]>([]);
  const [unanswered, setUnanswered] = useState(0);
  useEffect(() => {
    const clear = () => {
      if (sync.status === "live") setNotices(afterLive);
    };
    clear();
    return sync.on("status", clear);
  }, [sync]);
  const run = useCallback<RunCommand>(
    (command, args) => {
      const started = tick();
      setUnanswered((n) => n + 1);
      const answered = () => setUnanswered((n) => n - 1);
      sync
        .update(command, args)
        .finally(answered)
        .then(
          () => setNotices((shown) => afterCommit(shown, started)),
          (error: unknown) => {
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
  return { run, notices, unanswered, dismiss };
}
