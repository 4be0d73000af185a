import type { BrowserContext, Page } from "@playwright/test";
import type { NatsServer } from "@statesync/node";
import { expect } from "@statesync/playwright";
import { boardPath, type boardLists } from "./board.js";

/** A page of the board, and how many WebSockets it opened (only a leading tab connects). */
export interface Tab {
  readonly page: Page;
  sockets(): number;
}

/** Opens the board in a new tab of `context` (without waiting for it to be live). */
export async function openTab(context: BrowserContext, server: NatsServer): Promise<Tab> {
  const page = await context.newPage();
  let sockets = 0;
  page.on("websocket", () => (sockets += 1));
  await page.goto(boardPath(server));
  return { page, sockets: () => sockets };
}

/** Waits until every tab says `live`. */
export async function allLive(tabs: readonly Tab[]): Promise<void> {
  for (const tab of tabs) await expect(tab.page.getByTestId("status")).toHaveText("live");
}

/**
 * Starts `count` addCard updates in `page` without waiting for them (ids `<prefix><n>`); they are
 * kept in the page, and {@link settleStarted} waits for them.
 */
export function startCards(page: Page, prefix: string, count: number): Promise<void> {
  return page.evaluate(
    ([p, n]) => {
      const { sync } = (globalThis as any).__statesync__.default;
      const started = ((globalThis as any).__started ??= []) as Promise<unknown>[];
      for (let i = 0; i < n; i++) {
        started.push(sync.update("addCard", { id: `${p}${i}`, listId: "todo", title: `${p}${i}` }));
      }
    },
    [prefix, count] as const,
  );
}

/**
 * Starts one update (`command`, `args`) in `page` without waiting for it (offline, it resolves
 * only once it commits); {@link settleStarted} waits for it with the others.
 */
export function startCommand(page: Page, command: string, args: unknown): Promise<void> {
  return page.evaluate(
    ([c, a]) => {
      const { sync } = (globalThis as any).__statesync__.default;
      ((globalThis as any).__started ??= []).push(sync.update(c, a));
    },
    [command, args] as const,
  );
}

/** Waits for the updates {@link startCards} started in `page`; resolves to how many committed. */
export function settleStarted(page: Page): Promise<number> {
  return page.evaluate(async () => {
    const started = ((globalThis as any).__started ?? []) as Promise<unknown>[];
    const results = await Promise.allSettled(started);
    return results.filter((r) => r.status === "fulfilled").length;
  });
}

/** The ids of every card in `state` (a board), in order. */
export function cardIds(state: Parameters<typeof boardLists>[0]): string[] {
  return state.listIds.flatMap((listId) => state.lists[listId]!.cardIds);
}
