import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.js";
import { readConfig } from "./config.js";
import { openBoard } from "./open-board.js";
import "./styles.css";

const root = createRoot(document.getElementById("root")!);
const config = readConfig(location.search);

if ("error" in config) {
  root.render(<p className="notice">{config.error}</p>);
} else {
  let warning: string | undefined;
  let render = () => undefined as void;
  const sync = await openBoard(config, (w) => {
    // IndexedDB unusable (quota, private mode, blocked): the board works, reloads refetch it.
    warning = `This browser cannot store the board offline (${w.reason}).`;
    console.warn(w);
    render();
  });
  render = () =>
    root.render(
      <StrictMode>
        <App sync={sync} name={config.board} warning={warning} />
      </StrictMode>,
    );
  render();
}
