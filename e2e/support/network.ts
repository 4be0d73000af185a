import type { BrowserContext, WebSocketRoute } from "@playwright/test";

/** The WebSockets of a browser context, cut and restored by a test (see {@link cutWebSockets}). */
export interface WebSocketCut {
  /** Closes every open WebSocket of the context and refuses new ones, until `restore()`. */
  cut(): void;
  /** Lets new WebSockets through to the server again. */
  restore(): void;
}

/**
 * Routes every WebSocket of `context` through Playwright, so that a test can take these pages
 * offline while the server stays up for others (a Node writer that keeps editing). While cut, the
 * open sockets are closed and a new one hangs (CONNECTING) until `restore()`. Call before `goto`.
 */
export async function cutWebSockets(context: BrowserContext): Promise<WebSocketCut> {
  let restored: Promise<void> | undefined;
  let restore = () => undefined as void;
  const open: Array<{ page: WebSocketRoute; server: WebSocketRoute }> = [];
  // The handler must not return before connecting (see holdWebSockets): a new socket waits,
  // CONNECTING, until restore().
  await context.routeWebSocket(
    () => true,
    async (ws) => {
      while (restored) await restored;
      open.push({ page: ws, server: ws.connectToServer() });
    },
  );
  return {
    cut() {
      restored ??= new Promise<void>((resolve) => {
        restore = () => {
          restored = undefined;
          resolve();
        };
      });
      for (const { page, server } of open.splice(0)) {
        void page.close({ code: 1006 }).catch(() => undefined);
        void server.close().catch(() => undefined);
      }
    },
    restore() {
      restore();
    },
  };
}
