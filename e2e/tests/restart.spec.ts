import { expect, test, waitForConvergence } from "@statesync/playwright";
import {
  boardLists,
  boardModel,
  boardStream,
  openBoardPage,
  pageCommand,
} from "../support/board.js";

test("clients go offline when the server stops, then reconnect and lose no committed update", async ({
  natsServer,
  openNodeSynchronizer,
  newContext,
}) => {
  const contexts = await Promise.all([newContext(), newContext()]);
  const pages = await Promise.all(contexts.map((c) => openBoardPage(c, natsServer)));
  const node = await openNodeSynchronizer({ stream: boardStream(), model: boardModel });

  // Committed before the outage.
  const committed: string[] = [];
  for (const [i, page] of pages.entries()) {
    await pageCommand(page, "addCard", {
      id: `before-p${i}`,
      listId: "todo",
      title: `before ${i}`,
    });
    committed.push(`before-p${i}`);
  }
  await node.update("addCard", { id: "before-n", listId: "todo", title: "before node" });
  committed.push("before-n");
  await waitForConvergence([...pages, node]);

  await natsServer.kill("SIGTERM");
  for (const page of pages) await expect(page.getByTestId("status")).toHaveText("offline");
  await expect.poll(() => node.status).toBe("offline");

  // Edits made during the outage wait for the server (outcome unknown until it answers).
  const during = [
    ...pages.map((page, i) =>
      pageCommand(page, "addCard", {
        id: `during-p${i}`,
        listId: "doing",
        title: `during ${i}`,
      }).then(() => `during-p${i}`),
    ),
    node
      .update("addCard", { id: "during-n", listId: "doing", title: "during node" })
      .then(() => "during-n"),
  ];

  // One through the UI: it shows at once, marked as not sent, and the board counts both.
  const todo = pages[0]!.locator('[data-list-id="todo"]');
  await todo.getByPlaceholder("New card").fill("typed offline");
  await todo.getByRole("button", { name: "Add" }).click();
  await expect(todo.getByTestId("card").filter({ hasText: "typed offline" })).toHaveAttribute(
    "data-pending",
    "true",
  );
  await expect(pages[0]!.getByTestId("pending")).toHaveText(
    /^Offline: 2 edits not sent yet \(saved on this device\)/,
  );

  await natsServer.restart();
  for (const page of pages) await expect(page.getByTestId("status")).toHaveText("live");
  // The UI edit went through, and the notice went with it.
  await expect(pages[0]!.getByRole("status")).toHaveCount(0);
  await expect(pages[1]!.getByTestId("card").filter({ hasText: "typed offline" })).toHaveCount(1);
  await expect.poll(() => node.status).toBe("live");
  committed.push(...(await Promise.all(during)));

  const converged = await waitForConvergence([...pages, node]);
  const cards = boardLists(node.state).flatMap((l) => l.cards.map((c) => c.id));
  const typed = boardLists(node.state)
    .flatMap((l) => l.cards)
    .filter((c) => c.title === "typed offline");
  expect(typed).toHaveLength(1);
  expect(cards.filter((id) => id !== typed[0]!.id).sort()).toEqual([...committed].sort());
  for (const page of pages) {
    await expect(page.getByTestId("revision")).toHaveText(String(converged.revision));
    await expect(page.getByTestId("card")).toHaveCount(committed.length + 1);
  }
  await Promise.all(contexts.map((c) => c.close()));
});
