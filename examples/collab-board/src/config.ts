/** Where the app connects: read from the page's query string. */
export interface BoardConfig {
  /** WebSocket URL of the NATS server (`?server=ws://127.0.0.1:PORT`). */
  readonly server: string;
  /** Board name (`?board=NAME`, default "main"): the JetStream stream is `board_NAME`. */
  readonly board: string;
}

const BOARD = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Reads `?server=ws://…&board=…`. Returns an error message instead when the server is missing
 * or not a ws:// / wss:// URL, or the board name is not 1-64 of `[A-Za-z0-9_-]`.
 */
export function readConfig(search: string): BoardConfig | { error: string } {
  const params = new URLSearchParams(search);
  const server = params.get("server") ?? "";
  const board = params.get("board") ?? "main";
  if (!/^wss?:\/\/\S+$/.test(server)) {
    return { error: "Open this page with ?server=ws://HOST:PORT (npm run demo:web prints it)." };
  }
  if (!BOARD.test(board)) return { error: "The board name takes letters, digits, _ and - only." };
  return { server, board };
}
