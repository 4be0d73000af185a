import type { Card } from "./board-model.js";
import { EditableTitle } from "./EditableTitle.js";
import type { RunCommand } from "./run-command.js";

/** MIME type of a dragged card's id. */
export const CARD_MIME = "application/x-collab-board-card";

/** One card: rename (double-click), move with the arrows or by dragging, delete. */
export function CardItem(props: {
  id: string;
  card: Card;
  /** Where the card is in its list's `cardIds`. */
  index: number;
  /** The card's list: its id, where it is in `listIds`, its cards. */
  list: { id: string; index: number; cardIds: readonly string[] };
  listIds: readonly string[];
  run: RunCommand;
  /** An edit of this card is not sent yet. */
  pending: boolean;
}) {
  const { id, card, index, list, listIds, run, pending } = props;
  const move = (toListId: string, beforeCardId: string | null) =>
    run("moveCard", { cardId: id, toListId, beforeCardId });
  const neighbour = (offset: number) => listIds[list.index + offset];
  return (
    <li
      className={pending ? "card pending" : "card"}
      data-testid="card"
      data-pending={pending || undefined}
      title={pending ? "Not sent yet" : undefined}
      data-card-id={id}
      draggable
      onDragStart={(e) => e.dataTransfer.setData(CARD_MIME, id)}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        const dragged = e.dataTransfer.getData(CARD_MIME);
        e.stopPropagation();
        if (dragged && dragged !== id) {
          run("moveCard", { cardId: dragged, toListId: list.id, beforeCardId: id });
        }
      }}
    >
      <EditableTitle
        title={card.title}
        label="Card title"
        onRename={(title) => run("renameCard", { cardId: id, title })}
      />
      <span className="actions">
        <button
          title="Up"
          disabled={index === 0}
          onClick={() => move(list.id, list.cardIds[index - 1] ?? null)}
        >
          ▲
        </button>
        <button
          title="Down"
          disabled={index === list.cardIds.length - 1}
          onClick={() => move(list.id, list.cardIds[index + 2] ?? null)}
        >
          ▼
        </button>
        <button
          title="To the previous list"
          disabled={!neighbour(-1)}
          onClick={() => move(neighbour(-1)!, null)}
        >
          ◀
        </button>
        <button
          title="To the next list"
          disabled={!neighbour(1)}
          onClick={() => move(neighbour(1)!, null)}
        >
          ▶
        </button>
        <button title="Delete card" onClick={() => run("deleteCard", { cardId: id })}>
          ✕
        </button>
      </span>
    </li>
  );
}
