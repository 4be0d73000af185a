// Issue 10, case 9: a page with default options restores the latest state after a reload with
// the server gone, because its snapshot is kept current after every applied batch; nothing
// depends on pagehide or visibilitychange (browsers do not let an IndexedDB write started on
// unload finish).
import type { Page } from "@playwright/test";
import { jetStreamSnapshotKey } from "@statesync/node";
import { expect, holdWebSockets, probe, test } from "@statesync/playwright";
import { storedRevisionAt } from "../support/board.js";
import { serveDefaultPage, type DefaultPageServer } from "../support/default-page.js";

let pages: DefaultPageServer;
test.beforeAll(async () => {
  pages = await serveDefaultPage();
});
test.afterAll(() => pages.close());

let streams = 0;
const newStream = () => `case9_${process.pid}_${Date.now().toString(36)}_${++streams}`;

/** The revision of the snapshot in the page's IndexedDB for `stream` (0 when none). */
function storedRevision(page: Page, stream: string): Promise<number> {
  return storedRevisionAt(page, jetStreamSnapshotKey({ stream }));
}

/** Runs `count` awaited updates in the page and resolves to the last revision. */
function updates(page: Page, count: number): Promise<number> {
  return page.evaluate(async (n) => {
    const { sync } = (globalThis as any).__statesync__.default;
    let revision = 0;
    for (let i = 0; i < n; i++) revision = (await sync.update("add", { by: 1 })).revision;
    return revision;
  }, count);
}

async function openPage(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await expect(page.locator("body[data-opened=true]")).toBeAttached();
}

test("a page that updated and idled restores its latest revision after a reload with the server stopped", async ({
  natsServer,
  newContext,
}) => {
  const context = await newContext();
  const stream = newStream();
  const path = pages.url(natsServer.wsUrl, stream);
  const page = await context.newPage();
  await openPage(page, path);
  await expect.poll(async () => (await probe(page))?.status).toBe("live");
  const latest = await updates(page, 3);
  // Idle: the snapshot catches up with the applied state (no close, no hide, no unload).
  await expect.poll(() => storedRevision(page, stream)).toBe(latest);

  await natsServer.kill("SIGKILL");
  await page.reload();
  await expect(page.locator("body[data-opened=true]")).toBeAttached();
  const restored = (await probe(page))!;
  expect(restored.revision).toBe(latest);
  expect(restored.stats.snapshotsRestored).toBe(1);
  expect(restored.stats.entriesFetched).toBe(0);
  await context.close();
});

for (const how of ["reload", "navigate away", "close the tab"] as const) {
  test(`a page left (${how}) right after 50 awaited updates restores a recent revision`, async ({
    natsServer,
    newContext,
  }) => {
    const context = await newContext();
    const stream = newStream();
    const key = jetStreamSnapshotKey({ stream });
    const path = pages.url(natsServer.wsUrl, stream);
    const page = await context.newPage();
    await openPage(page, path);
    await expect.poll(async () => (await probe(page))?.status).toBe("live");
    // Sockets opened from now on are held: the page that comes back cannot reach the server.
    await holdWebSockets(context);
    let latest: number;
    let stored: number;
    let next: Page;
    if (how !== "close the tab") {
      // Leave right after the last update resolves and the stored revision was read (a read
      // that waits for a save running then): no time for anything else to settle.
      const left = how === "reload" ? page.waitForEvent("load") : page.waitForURL("about:blank");
      [latest, stored] = await page.evaluate(
        async ([away, k]) => {
          const { sync } = (globalThis as any).__statesync__.default;
          let revision = 0;
          for (let i = 0; i < 50; i++) revision = (await sync.update("add", { by: 1 })).revision;
          const saved = await new Promise<number>((resolve, reject) => {
            const open = indexedDB.open("statesync");
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
              const get = open.result.transaction("snapshots").objectStore("snapshots").get(k);
              get.onsuccess = () => {
                open.result.close();
                resolve((get.result?.revision as number | undefined) ?? 0);
              };
              get.onerror = () => reject(get.error);
            };
          });
          // Navigating at once would end this evaluation before it returns: the next task.
          if (away) setTimeout(() => location.assign("about:blank"));
          else setTimeout(() => location.reload());
          return [revision, saved] as const;
        },
        [how === "navigate away", key] as const,
      );
      await left;
      if (how === "navigate away") await page.goto(path);
      next = page;
    } else {
      latest = await updates(page, 50);
      stored = await storedRevision(page, stream);
      await page.close();
      next = await context.newPage();
      await next.goto(path);
    }
    await expect(next.locator("body[data-opened=true]")).toBeAttached();
    await natsServer.kill("SIGKILL");
    const restored = (await probe(next))!;
    expect(restored.stats.entriesFetched).toBe(0);
    expect(restored.stats.snapshotsRestored).toBe(1);
    // The genesis entry is revision 1: 50 updates end at 51. The snapshot is saved after every
    // applied batch (packages/browser/README.md); what was stored when the page was left is what comes back, or a later save. How far it
    // trails the latest depends on how long the saves took (1 to 31 behind were seen with 2
    // test workers on 2 cores): the test asserts the outcome, not the timing. Before issue 10
    // case 9 nothing was stored (snapshotEvery 100), and a save on unload never finished.
    expect(latest).toBe(51);
    expect(stored).toBeGreaterThanOrEqual(1); // at least the one saved at open
    expect(restored.revision).toBeGreaterThanOrEqual(stored);
    expect(restored.revision).toBeLessThanOrEqual(latest);
    await context.close();
  });
}
