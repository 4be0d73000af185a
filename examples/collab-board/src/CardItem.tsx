import type { Card, List } from "./board-model.js";
import { EditableTitle } from "./EditableTitle.js";
import type { RunCommand } from "./run-command.js";

/** MIME type of a dragged card's id. */
export const CARD_MIME = "application/x-collab-board-card";

/** One card: rename (double-click), move with the arrows or by dragging, delete. */
export function CardItem(props: {
  card: Card;
  list: List;
  lists: readonly List[];
  run: RunCommand;
  /** An edit of this card is not sent yet. */
  pending: boolean;
}) {
  const { card, list, lists, run, pending } = props;
  const index = list.cards.indexOf(card);
  const listIndex = lists.indexOf(list);
  const move = (toListId: string, beforeCardId: string | null) =>
    run("moveCard", { cardId: card.id, toListId, beforeCardId });
  const neighbour = (offset: number) => lists[listIndex + offset];
  return (
    <li
      className={pending ? "card pending" : "card"}
      data-testid="card"
      data-pending={pending || undefined}
      title={pending ? "Not sent yet" : undefined}
      data-card-id={card.id}
      draggable
      onDragStart={(e) => e.dataTransfer.setData(CARD_MIME, card.id)}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        const dragged = e.dataTransfer.getData(CARD_MIME);
        e.stopPropagation();
        if (dragged && dragged !== card.id) {
          run("moveCard", { cardId: dragged, toListId: list.id, beforeCardId: card.id });
        }
      }}
    >
      <EditableTitle
        title={card.title}
        label="Card title"
        onRename={(title) => run("renameCard", { cardId: card.id, title })}
      />
      <span className="actions">
        <button
          title="Up"
          disabled={index === 0}
          onClick={() => move(list.id, list.cards[index - 1]?.id ?? null)}
        >
          ▲
        </button>
        <button
          title="Down"
          disabled={index === list.cards.length - 1}
          onClick={() => move(list.id, list.cards[index + 2]?.id ?? null)}
        >
          ▼
        </button>
        <button
          title="To the previous list"
          disabled={!neighbour(-1)}
          onClick={() => move(neighbour(-1)!.id, null)}
        >
          ◀
        </button>
        <button
          title="To the next list"
          disabled={!neighbour(1)}
          onClick={() => move(neighbour(1)!.id, null)}
        >
          ▶
        </button>
        <button title="Delete card" onClick={() => run("deleteCard", { cardId: card.id })}>
          ✕
        </button>
      </span>
    </li>
  );
}
