import {
  usePending,
  usePendingInOtherTabs,
  useSynchronizedState,
  useSyncStatus,
} from "@statesync/browser/react";
import { useMemo } from "react";
import { AddForm } from "./AddForm.js";
import { newId } from "./board-model.js";
import { ListColumn } from "./ListColumn.js";
import type { BoardSync } from "./open-board.js";
import { StatusBar } from "./StatusBar.js";
import { useEdits } from "./use-edits.js";
import { useStuckSeconds } from "./use-stuck-seconds.js";

/** The board page: status bar, notices (failed edits, warnings), the lists. */
export function App(props: { sync: BoardSync; name: string; warning: string | undefined }) {
  const { sync } = props;
  const board = useSynchronizedState(sync);
  const { run, notices, dismiss } = useEdits(sync);
  const status = useSyncStatus(sync);
  const all = usePending(sync);
  // Edits made on an earlier copy of this board (deleted and created again) are set aside: kept
  // on this device, never sent unless the user says so (docs/offline.md, "One log").
  const pending = useMemo(() => all.filter((p) => !p.otherLog), [all]);
  const setAside = useMemo(() => all.filter((p) => p.otherLog), [all]);
  // Edits of the other tabs of this browser, shown here before the server has them.
  const others = usePendingInOtherTabs(sync);
  // What pending edits touch (this tab's and the others'): their cards (and new lists) are
  // marked as not sent yet.
  const pendingIds = useMemo(() => touchedIds([...pending, ...others]), [pending, others]);
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
      {pending.length > 0 && <PendingLine pending={pending} status={status} />}
      {others.length > 0 && (
        <p className="notice" role="status" data-testid="pending-other-tabs">
          {othersText(others.length)}
        </p>
      )}
      {status === "stalled" && (
        <p className="notice" role="status" data-testid="stalled">
          {stalledText(sync.stallReason)}
        </p>
      )}
      {setAside.length > 0 && (
        <p className="notice" role="status" data-testid="set-aside">
          {count(setAside.length)} made on an earlier copy of this board, which was deleted and
          created again, {setAside.length === 1 ? "is" : "are"} kept on this device, not sent.{" "}
          <button onClick={() => void sync.rebindPending().catch(() => undefined)}>
            Send to this board
          </button>{" "}
          <button onClick={() => setAside.forEach((p) => void sync.discard(p.id).catch(() => 0))}>
            Discard
          </button>
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
        {board.listIds.map((listId, index) => (
          <ListColumn
            key={listId}
            board={board}
            listId={listId}
            index={index}
            run={run}
            pendingIds={pendingIds}
          />
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

/** "1 edit", "3 edits". */
function count(n: number): string {
  return n === 1 ? "1 edit" : `${n} edits`;
}

/**
 * Where pending edits wait: stored on this device only once their records are written (a
 * trial saw "saved on this device" for seconds before they were, and a reload lost them).
 */
function where(pending: ReadonlyArray<{ durable: boolean; storing: boolean }>): string {
  if (pending.every((p) => p.durable)) return "saved on this device";
  if (pending.every((p) => p.durable || p.storing)) return "being saved on this device";
  return "kept in this tab only";
}

/**
 * The line about edits not sent yet, on its own: it re-renders every second while edits are on
 * their way (how long the server has not answered), which must not re-render the board (each
 * render of the board reads the optimistic view, recomputed after every entry of a burst).
 */
function PendingLine(props: {
  pending: ReadonlyArray<{ durable: boolean; storing: boolean }>;
  status: string;
}) {
  const { pending, status } = props;
  const stuck = useStuckSeconds(status === "live", pending.length);
  return (
    <p className="notice" role="status" data-testid="pending">
      {pendingText(pending.length, status, where(pending), stuck)}
    </p>
  );
}

/** The line about edits not sent yet: how many, where they wait, and when they go. */
function pendingText(n: number, status: string, where: string, stuck: number): string {
  if (status === "live" && stuck >= 5) {
    return `Sending ${count(n)}: the server has not answered for ${stuck} s (${where}); ${n === 1 ? "it is" : "they are"} sent when it does.`;
  }
  // Not stored yet on this device: said, as a reload now would lose them.
  if (status === "live") {
    return where === "saved on this device"
      ? `Sending ${count(n)}…`
      : `Sending ${count(n)}… (${where})`;
  }
  const it = n === 1 ? "it is" : "they are";
  if (status === "stalled") return `${count(n)} not sent (${where}): reload the page to send.`;
  const now = status === "offline" ? "Offline" : "Connecting";
  return `${now}: ${count(n)} not sent yet (${where}); ${it} sent when the server is back.`;
}

/** The line about other tabs' edits not sent yet (they send them, or the tab that takes over). */
function othersText(n: number): string {
  const are = n === 1 ? "is" : "are";
  return `${count(n)} made in other tabs of this browser ${are} not sent yet; ${n === 1 ? "it shows" : "they show"} here already.`;
}

/** Why the board stopped, and what to do. */
function stalledText(reason: { code: string; message: string } | undefined): string {
  if (reason?.code === "LOG_REPLACED") {
    return "This board was deleted and created again on the server: reload the page to open it.";
  }
  return `This board stopped (${reason?.message ?? "unknown reason"}): reload the page.`;
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
