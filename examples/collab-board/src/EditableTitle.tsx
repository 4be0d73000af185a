import { useState } from "react";
import { TITLE_MAX } from "./board-model.js";

/** A title that turns into an input on double-click; Enter or leaving saves, Escape cancels. */
export function EditableTitle(props: {
  title: string;
  label: string;
  onRename: (title: string) => void;
}) {
  const [draft, setDraft] = useState<string | undefined>(undefined);
  if (draft === undefined) {
    return (
      <span
        className="title"
        title="Double-click to rename"
        onDoubleClick={() => setDraft(props.title)}
      >
        {props.title}
      </span>
    );
  }
  const commit = () => {
    const title = draft.trim();
    setDraft(undefined);
    if (title && title !== props.title) props.onRename(title);
  };
  return (
    <input
      autoFocus
      aria-label={props.label}
      value={draft}
      maxLength={TITLE_MAX}
      onChange={(e) => setDraft(e.target.value)}
      onBlur={commit}
      onKeyDown={(e) => {
        if (e.key === "Enter") commit();
        if (e.key === "Escape") setDraft(undefined);
      }}
    />
  );
}
