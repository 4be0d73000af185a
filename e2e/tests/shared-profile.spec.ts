import { expect, holdWebSockets, probe, test, waitForConvergence } from "@statesync/playwright";
import {
  boardModel,
  boardStream,
  openBoardPage,
  pageCommand,
  storedRevision,
} from "../support/board.js";
import { allLive, openTab } from "../support/tabs.js";

test("two tabs of one profile share one connection, and the leader's snapshot restores both", async ({
  natsServer,
  openNodeSynchronizer,
  newContext,
}) => {
  // docs/offline.md, "Tabs": one tab leads (holds the WebSocket, writes the snapshot), the other
  // reaches the server through it; each is a full replica of the board.
  const profile = await newContext();
  const tabs = [await openTab(profile, natsServer), await openTab(profile, natsServer)];
  await allLive(tabs);
  const node = await openNodeSynchronizer({ stream: boardStream(), model: boardModel });

  // Both tabs edit at once.
  await Promise.all(
    tabs.flatMap((tab, i) =>
      Array.from({ length: 8 }, (_, n) =>
        pageCommand(tab.page, "addCard", {
          id: `t${i}-${n}`,
          listId: "todo",
          title: `tab ${i} #${n}`,
        }),
      ),
    ),
  );
  const converged = await waitForConvergence([...tabs.map((t) => t.page), node]);
  expect(tabs.filter((t) => t.sockets() > 0)).toHaveLength(1);
  // The stored snapshot ends at the newest revision.
  await expect.poll(() => storedRevision(tabs[0]!.page)).toBe(converged.revision);

  // Reload both with the server held off: each restores that snapshot whole.
  const held = await holdWebSockets(profile);
  await Promise.all(tabs.map((tab) => tab.page.reload()));
  for (const { page } of tabs) {
    await expect(page.getByTestId("card")).toHaveCount(16);
    const restored = (await probe(page))!;
    expect(restored.stats.snapshotsRestored).toBe(1);
    expect(restored.revision).toBe(converged.revision);
    expect(restored.hash).toBe(converged.hash);
    await expect(page.getByTestId("status")).not.toHaveText("live");
  }
  held.release();
  await allLive(tabs);
  await waitForConvergence([...tabs.map((t) => t.page), node]);
  await profile.close();
});

test("a browser out of storage quota keeps editing in memory and says so once", async ({
  natsServer,
  baseURL,
  newContext,
}) => {
  const context = await newContext();
  const page = await context.newPage();
  // A real QuotaExceededError: shrink the origin's quota before it ever used IndexedDB.
  const devtools = await context.newCDPSession(page);
  await devtools.send("Storage.overrideQuotaForOrigin", {
    origin: new URL(baseURL!).origin,
    quotaSize: 1,
  });
  const warnings: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "warning" && m.text().includes("SnapshotStoreWarning"))
      warnings.push(m.text());
  });
  const other = await openBoardPage(await newContext(), natsServer);
  await page.goto(`/?server=${encodeURIComponent(natsServer.wsUrl)}&board=main`);
  await expect(page.getByTestId("status")).toHaveText("live");
  let last = 0;
  for (let n = 0; n < 3; n++) {
    last = await pageCommand(page, "addCard", { id: `q${n}`, listId: "todo", title: `card ${n}` });
  }
  await expect(page.getByRole("status")).toHaveText(/cannot store the board offline \(quota\)/);
  await waitForConvergence([page, other], { atLeast: last });
  await expect(other.getByTestId("card")).toHaveCount(3);
  expect(warnings).toHaveLength(1);
  await context.close();
  await other.context().close();
});
