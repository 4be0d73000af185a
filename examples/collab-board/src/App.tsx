import { usePending, useSynchronizedState, useSyncStatus } from "@statesync/browser/react";
import { useMemo } from "react";
import { AddForm } from "./AddForm.js";
import { newId } from "./board-model.js";
import { ListColumn } from "./ListColumn.js";
import type { BoardSync } from "./open-board.js";
import { StatusBar } from "./StatusBar.js";
import { useEdits } from "./use-edits.js";

/** The board page: status bar, notices (failed edits, warnings), the lists. */
export function App(props: { sync: BoardSync; name: string; warning: string | undefined }) {
  const { sync } = props;
  const lists = useSynchronizedState(sync, (board) => board.lists);
  const { run, notices, dismiss } = useEdits(sync);
  const status = useSyncStatus(sync);
  const pending = usePending(sync);
  // What pending edits touch: their cards (and new lists) are marked as not sent yet.
  const pendingIds = useMemo(() => touchedIds(pending), [pending]);
  return (
    <main>
      <header className="top">
        <h1>Board “{props.name}”</h1>
        <StatusBar sync={sync} />
      </header>
      {props.warning && (
        <p className="notice" role="status">
          {props.warning}
        </p>
      )}
      {pending.length > 0 && (
        <p className="notice" role="status" data-testid="pending">
          {pendingText(
            pending.length,
            status,
            pending.every((p) => p.durable),
          )}
        </p>
      )}
      {notices.map((notice) => (
        <p className="notice" role="status" key={notice.id}>
          {notice.text}
          <button className="dismiss" title="Dismiss" onClick={() => dismiss(notice.id)}>
            ✕
          </button>
        </p>
      ))}
      <div className="lists">
        {lists.map((list) => (
          <ListColumn key={list.id} list={list} lists={lists} run={run} pendingIds={pendingIds} />
        ))}
        <section className="list new-list">
          <AddForm
            placeholder="New list"
            onAdd={(title) => run("addList", { id: newId(), title })}
          />
        </section>
      </div>
    </main>
  );
}

/** The line about edits not sent yet: how many, and where they wait. */
function pendingText(count: number, status: string, durable: boolean): string {
  const edits = count === 1 ? "1 edit" : `${count} edits`;
  if (status === "live") return `Sending ${edits}…`;
  const where = durable ? "saved on this device" : "kept in this tab only";
  return `Offline: ${edits} not sent yet (${where}); they are sent when the server is back.`;
}

/** Ids of the cards and lists the pending edits touch. */
function touchedIds(pending: ReadonlyArray<{ args: unknown }>): ReadonlySet<string> {
  const ids = new Set<string>();
  for (const { args } of pending) {
    const a = (args ?? {}) as Record<string, unknown>;
    for (const k of ["id", "cardId", "listId"]) if (typeof a[k] === "string") ids.add(a[k]);
  }
  return ids;
}
