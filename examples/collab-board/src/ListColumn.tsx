import { AddForm } from "./AddForm.js";
import { newId, type List } from "./board-model.js";
import { CARD_MIME, CardItem } from "./CardItem.js";
import { EditableTitle } from "./EditableTitle.js";
import type { RunCommand } from "./run-command.js";

/** One list: its title, its cards (a drop target: dropped cards go to the end) and a new-card form. */
export function ListColumn(props: {
  list: List;
  lists: readonly List[];
  run: RunCommand;
  /** Ids of cards touched by edits not sent yet. */
  pendingIds: ReadonlySet<string>;
}) {
  const { list, lists, run, pendingIds } = props;
  const index = lists.indexOf(list);
  return (
    <section
      className="list"
      data-testid="list"
      data-list-id={list.id}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        const cardId = e.dataTransfer.getData(CARD_MIME);
        if (cardId) run("moveCard", { cardId, toListId: list.id, beforeCardId: null });
      }}
    >
      <header>
        <EditableTitle
          title={list.title}
          label="List title"
          onRename={(title) => run("renameList", { listId: list.id, title })}
        />
        <span className="actions">
          <button
            title="Move list left"
            disabled={index === 0}
            onClick={() => run("moveList", { listId: list.id, beforeListId: lists[index - 1]!.id })}
          >
            ◀
          </button>
          <button
            title="Move list right"
            disabled={index === lists.length - 1}
            onClick={() =>
              run("moveList", { listId: list.id, beforeListId: lists[index + 2]?.id ?? null })
            }
          >
            ▶
          </button>
          <button title="Delete list" onClick={() => run("deleteList", { listId: list.id })}>
            ✕
          </button>
        </span>
      </header>
      <ul>
        {list.cards.map((card) => (
          <CardItem
            key={card.id}
            card={card}
            list={list}
            lists={lists}
            run={run}
            pending={pendingIds.has(card.id)}
          />
        ))}
      </ul>
      <AddForm
        placeholder="New card"
        onAdd={(title) => run("addCard", { id: newId(), listId: list.id, title })}
      />
    </section>
  );
}
