import { useSynchronizedState } from "@statesync/browser/react";
import { useCallback, useState } from "react";
import { AddForm } from "./AddForm.js";
import { newId } from "./board-model.js";
import { ListColumn } from "./ListColumn.js";
import type { BoardSync } from "./open-board.js";
import type { RunCommand } from "./run-command.js";
import { StatusBar } from "./StatusBar.js";

/** The board page: status bar, a notice line for failed edits and warnings, the lists. */
export function App(props: { sync: BoardSync; name: string; warning: string | undefined }) {
  const { sync } = props;
  const lists = useSynchronizedState(sync, (board) => board.lists);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const run = useCallback<RunCommand>(
    (command, args) => {
      // Offline, an edit waits for the server (up to outcomeTimeoutMs, 30 s) and commits if it
      // comes back in time: say so, and clear it once the edit is through.
      const waiting =
        sync.status === "live" ? undefined : "Offline: this edit is sent when the server is back";
      setNotice(waiting);
      sync.update(command, args).then(
        () => setNotice((shown) => (shown === waiting ? undefined : shown)),
        (err: unknown) => {
          setNotice(`Could not ${command}: ${err instanceof Error ? err.message : String(err)}`);
        },
      );
    },
    [sync],
  );
  return (
    <main>
      <header className="top">
        <h1>Board “{props.name}”</h1>
        <StatusBar sync={sync} />
      </header>
      {(notice ?? props.warning) && (
        <p className="notice" role="status">
          {notice ?? props.warning}
        </p>
      )}
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
