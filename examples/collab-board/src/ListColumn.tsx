import type { Immutable } from "@statesync/browser";
import { AddForm } from "./AddForm.js";
import { newId, type Board } from "./board-model.js";
import { CARD_MIME, CardItem } from "./CardItem.js";
import { EditableTitle } from "./EditableTitle.js";
import type { RunCommand } from "./run-command.js";

/** One list: its title, its cards (a drop target: dropped cards go to the end) and a new-card form. */
export function ListColumn(props: {
  board: Immutable<Board>;
  listId: string;
  /** Where the list is in `board.listIds`. */
  index: number;
  run: RunCommand;
  /** Ids of cards touched by edits not sent yet. */
  pendingIds: ReadonlySet<string>;
}) {
  const { board, listId, index, run, pendingIds } = props;
  const { listIds } = board;
  const list = board.lists[listId]!;
  return (
    <section
      className="list"
      data-testid="list"
      data-list-id={listId}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        const cardId = e.dataTransfer.getData(CARD_MIME);
        if (cardId) run("moveCard", { cardId, toListId: listId, beforeCardId: null });
      }}
    >
      <header>
        <EditableTitle
          title={list.title}
          label="List title"
          onRename={(title) => run("renameList", { listId, title })}
        />
        <span className="actions">
          <button
            title="Move list left"
            disabled={index === 0}
            onClick={() => run("moveList", { listId, beforeListId: listIds[index - 1]! })}
          >
            ◀
          </button>
          <button
            title="Move list right"
            disabled={index === listIds.length - 1}
            onClick={() => run("moveList", { listId, beforeListId: listIds[index + 2] ?? null })}
          >
            ▶
          </button>
          <button title="Delete list" onClick={() => run("deleteList", { listId })}>
            ✕
          </button>
        </span>
      </header>
      <ul>
        {list.cardIds.map((cardId, cardIndex) => (
          <CardItem
            key={cardId}
            id={cardId}
            card={board.cards[cardId]!}
            index={cardIndex}
            list={{ id: listId, index, cardIds: list.cardIds }}
            listIds={listIds}
            run={run}
            pending={pendingIds.has(cardId)}
          />
        ))}
      </ul>
      <AddForm
        placeholder="New card"
        onAdd={(title) => run("addCard", { id: newId(), listId, title })}
      />
    </section>
  );
}
