import type { BrowserContext, Page } from "@playwright/test";
import { jetStreamSnapshotKey, type CommandArgs, type NatsServer } from "@statesync/node";
import { expect } from "@statesync/playwright";
import { boardLists, boardModel } from "../../examples/collab-board/src/board-model.js";

export { boardLists, boardModel };
type Commands = (typeof boardModel)["commands"];

/** The app's address for `board` on `server` (relative to the preview's baseURL). */
export function boardPath(server: NatsServer, board = "main"): string {
  return `/?server=${encodeURIComponent(server.wsUrl)}&board=${board}`;
}

/** The stream a board lives in (as the app names it). */
export const boardStream = (board = "main") => `board_${board}`;

/** Opens the board in a new page of `context` and waits until it is live. */
export async function openBoardPage(
  context: BrowserContext,
  server: NatsServer,
  board = "main",
): Promise<Page> {
  const page = await context.newPage();
  await page.goto(boardPath(server, board));
  await expect(page.getByTestId("status")).toHaveText("live");
  return page;
}

/**
 * Runs a board command in the page as a conditional update (through the replica the app
 * exposed) and resolves to the revision it committed at.
 */
export function pageCommand<K extends keyof Commands & string>(
  page: Page,
  command: K,
  args: CommandArgs<Commands[K]>,
): Promise<number> {
  return page.evaluate(
    async ([name, a]) => {
      const { sync } = (globalThis as any).__statesync__.default;
      return (await sync.update(name, a)).revision as number;
    },
    [command, args] as const,
  );
}

/** The revision of the snapshot the page's IndexedDB holds for `board` (0 when none). */
export function storedRevision(page: Page, board = "main"): Promise<number> {
  return storedRevisionAt(page, jetStreamSnapshotKey({ stream: boardStream(board) }));
}

/** The revision of the snapshot the page's IndexedDB holds under snapshot key `key` (0: none). */
export function storedRevisionAt(page: Page, key: string): Promise<number> {
  return page.evaluate(
    (k) =>
      new Promise<number>((resolve, reject) => {
        const open = indexedDB.open("statesync");
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          if (!db.objectStoreNames.contains("snapshots")) {
            db.close();
            return resolve(0);
          }
          const get = db.transaction("snapshots").objectStore("snapshots").get(k);
          get.onsuccess = () => {
            db.close();
            resolve((get.result?.revision as number | undefined) ?? 0);
          };
          get.onerror = () => reject(get.error);
        };
      }),
    key,
  );
}

/** Titles of the cards of every list, in order: `{ listId: [titles] }`. */
export async function cardTitles(page: Page): Promise<Record<string, string[]>> {
  const lists = await page.getByTestId("list").all();
  const result: Record<string, string[]> = {};
  for (const list of lists) {
    const id = (await list.getAttribute("data-list-id"))!;
    result[id] = await list.getByTestId("card").locator(".title").allTextContents();
  }
  return result;
}
