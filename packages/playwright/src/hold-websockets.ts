import type { BrowserContext, Page, WebSocketRoute } from "@playwright/test";

/** WebSockets held by {@link holdWebSockets}. */
export interface HeldWebSockets {
  /** How many connection attempts are waiting. */
  readonly pending: number;
  /** Lets every waiting and later connection through to the server. */
  release(): void;
}

/**
 * Holds the WebSocket connections a page (or every page of a context) opens to `url` (a glob,
 * RegExp or predicate, as in `page.routeWebSocket`; default: all), until `release()`. A held
 * socket stays `CONNECTING` (Playwright's `routeWebSocket` connects to the server only when told
 * to), so a test can prove that what the page shows came from local storage, not the server.
 * Call it before `page.goto` / `page.reload`.
 */
export async function holdWebSockets(
  target: Page | BrowserContext,
  url: Parameters<Page["routeWebSocket"]>[0] = () => true,
): Promise<HeldWebSockets> {
  let pending = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  // The handler must not return before connecting: a handler that returns without having called
  // connectToServer() makes Playwright open a mocked socket instead.
  await target.routeWebSocket(url, async (ws: WebSocketRoute) => {
    pending += 1;
    await released;
    pending -= 1;
    ws.connectToServer();
  });
  return {
    get pending() {
      return pending;
    },
    release,
  };
}
