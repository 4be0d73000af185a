import { useSynchronizedState, useSyncStatus } from "@statesync/browser/react";
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
  const { run, notices, unanswered, dismiss } = useEdits(sync);
  const status = useSyncStatus(sync);
  const waiting = status === "live" || unanswered === 0 ? undefined : unanswered;
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
      {waiting !== undefined && (
        <p className="notice" role="status" data-testid="waiting">
          {`${status === "offline" ? "Offline" : "Not connected yet"}: ${waiting} ${waiting === 1 ? "edit waits" : "edits wait"} for the server.`}
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
          <ListColumn key={list.id} list={list} lists={lists} run={run} />
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
