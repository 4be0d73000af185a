import { expect, test, waitForConvergence } from "@statesync/playwright";
import { boardModel } from "../src/board-model.js";

// Two browser windows and a Node process share one board on a throwaway nats-server.
test("a card added in one window shows up in the other and in Node", async ({
  newPage,
  natsServer,
  openNodeSynchronizer,
}) => {
  const url = `/?server=${encodeURIComponent(natsServer.wsUrl)}&board=demo`;
  const [alice, bob] = await Promise.all([newPage(), newPage()]);
  await Promise.all([alice.goto(url), bob.goto(url)]);
  const node = await openNodeSynchronizer({ stream: "board_demo", model: boardModel });

  const todo = alice.locator('[data-list-id="todo"]');
  await todo.getByPlaceholder("New card").fill("Write the release notes");
  await todo.getByRole("button", { name: "Add" }).click();
  await node.update("renameList", { listId: "done", title: "Shipped" });

  await expect(bob.getByTestId("card")).toHaveText(/Write the release notes/);
  await expect(alice.getByText("Shipped")).toBeVisible();
  const { revision } = await waitForConvergence([alice, bob, node]);
  await expect(bob.getByTestId("revision")).toHaveText(String(revision));
});
