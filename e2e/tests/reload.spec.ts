import { expect, holdWebSockets, probe, test, waitForConvergence } from "@statesync/playwright";
import {
  boardModel,
  boardStream,
  openBoardPage,
  pageCommand,
  storedRevision,
} from "../support/board.js";

test("a reloaded page shows its stored board before the server answers, then fetches only the tail", async ({
  natsServer,
  openNodeSynchronizer,
  newContext,
}) => {
  const context = await newContext();
  const tab = await openBoardPage(context, natsServer);
  const node = await openNodeSynchronizer({ stream: boardStream(), model: boardModel });

  for (const n of [1, 2, 3]) {
    await pageCommand(tab, "addCard", { id: `c${n}`, listId: "todo", title: `card ${n}` });
  }
  const before = await waitForConvergence([tab, node]);
  // The app writes a snapshot after every entry: wait until IndexedDB holds this revision.
  await expect.poll(() => storedRevision(tab)).toBe(before.revision);

  // From now on the page's WebSockets are held (the open one stays until the reload drops it).
  const held = await holdWebSockets(tab);
  await tab.reload();

  // Rendered from IndexedDB: the stored cards and revision, while the socket is still held.
  await expect(tab.getByTestId("card")).toHaveCount(3);
  await expect(tab.getByTestId("revision")).toHaveText(String(before.revision));
  await expect.poll(() => held.pending).toBeGreaterThan(0);
  await expect(tab.getByTestId("status")).not.toHaveText("live");
  const restored = (await probe(tab))!;
  expect(restored.revision).toBe(before.revision);
  expect(restored.hash).toBe(before.hash);
  expect(restored.stats.snapshotsRestored).toBe(1);
  expect(restored.stats.entriesFetched).toBe(0);

  // Meanwhile the others go on editing.
  const missed = 4;
  for (let n = 1; n <= missed; n++) {
    await node.update("addCard", { id: `n${n}`, listId: "doing", title: `while away ${n}` });
  }
  await expect(tab.getByTestId("card")).toHaveCount(3);

  // Released: it catches up with what the others did, reading only the entries it missed.
  held.release();
  await expect(tab.getByTestId("status")).toHaveText("live");
  const after = await waitForConvergence([tab, node], { atLeast: before.revision + missed });
  await expect(tab.getByTestId("card")).toHaveCount(3 + missed);
  const caughtUp = (await probe(tab))!;
  expect(caughtUp.stats.entriesFetched).toBe(after.revision - before.revision);
  expect(caughtUp.stats.entriesFetched).toBe(missed);
  await context.close();
});
