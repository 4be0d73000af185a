import { useState, type FormEvent } from "react";
import { TITLE_MAX } from "./board-model.js";

/** A one-field form that calls `onAdd` with the trimmed text and clears itself. */
export function AddForm(props: { placeholder: string; onAdd: (title: string) => void }) {
  const [title, setTitle] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (title.trim()) props.onAdd(title.trim());
    setTitle("");
  };
  return (
    <form className="add" onSubmit={submit}>
      <input
        aria-label={props.placeholder}
        placeholder={props.placeholder}
        value={title}
        maxLength={TITLE_MAX}
        onChange={(e) => setTitle(e.target.value)}
      />
      <button type="submit">Add</button>
    </form>
  );
}
