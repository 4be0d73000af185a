import { stateHash } from "@statesync/node";
import { expect, probe, test, waitForConvergence } from "@statesync/playwright";
import {
  boardLists,
  boardModel,
  boardStream,
  cardTitles,
  openBoardPage,
  pageCommand,
} from "../support/board.js";

test("three browsers and a Node client editing at once converge to one state", async ({
  natsServer,
  openNodeSynchronizer,
  newContext,
}) => {
  const contexts = await Promise.all([1, 2, 3].map(() => newContext()));
  const pages = await Promise.all(contexts.map((c) => openBoardPage(c, natsServer)));
  const node = await openNodeSynchronizer({ stream: boardStream(), model: boardModel });
  await node.update("addCard", { id: "shared", listId: "todo", title: "Everybody moves me" });

  // Everybody at once: each client adds cards, renames a list, and moves the same card to a
  // different list (conditional updates: the losers retry on the winner's state).
  const targets = ["todo", "doing", "done"] as const;
  const edits = [
    ...pages.flatMap((page, i) => [
      ...[1, 2, 3].map((n) =>
        pageCommand(page, "addCard", {
          id: `p${i}-${n}`,
          listId: "todo",
          title: `page ${i} #${n}`,
        }),
      ),
      pageCommand(page, "moveCard", {
        cardId: "shared",
        toListId: targets[i]!,
        beforeCardId: null,
      }),
    ]),
    ...[1, 2, 3].map((n) =>
      node
        .update("addCard", { id: `n-${n}`, listId: "done", title: `node #${n}` })
        .then((r) => r.revision),
    ),
    node.update("renameList", { listId: "doing", title: "In progress" }).then((r) => r.revision),
  ];
  // Each resolves to the revision its entry committed at (a client batches queued updates).
  const revisions = await Promise.all(edits);

  const converged = await waitForConvergence([...pages, node], { atLeast: Math.max(...revisions) });
  expect(converged.hash).toBe(stateHash(node.state));
  const cards = boardLists(node.state)
    .flatMap((l) => l.cards.map((c) => c.id))
    .sort();
  expect(cards).toEqual(
    [
      "n-1",
      "n-2",
      "n-3",
      "shared",
      ...[0, 1, 2].flatMap((i) => [1, 2, 3].map((n) => `p${i}-${n}`)),
    ].sort(),
  );

  // Every page renders that state (and its revision), not only holds it.
  const expected = Object.fromEntries(
    boardLists(node.state).map((l) => [l.id, l.cards.map((c) => c.title)]),
  );
  for (const page of pages) {
    await expect(page.getByTestId("revision")).toHaveText(String(converged.revision));
    expect(await cardTitles(page)).toEqual(expected);
    await expect(page.getByTestId("list").filter({ hasText: "In progress" })).toHaveCount(1);
    expect((await probe(page))?.hash).toBe(converged.hash);
  }
  await Promise.all(contexts.map((c) => c.close()));
});

test("edits made through the UI reach the other windows", async ({ natsServer, newContext }) => {
  const [a, b] = await Promise.all([newContext(), newContext()]);
  const [pageA, pageB] = await Promise.all([
    openBoardPage(a, natsServer),
    openBoardPage(b, natsServer),
  ]);
  const todoA = pageA.locator('[data-list-id="todo"]');
  await todoA.getByPlaceholder("New card").fill("Buy milk");
  await todoA.getByRole("button", { name: "Add" }).click();
  const cardOnB = pageB.getByTestId("card").filter({ hasText: "Buy milk" });
  await expect(cardOnB).toHaveCount(1);
  await cardOnB.getByTitle("To the next list").click();
  await expect(pageA.locator('[data-list-id="doing"]').getByTestId("card")).toHaveText(/Buy milk/);
  await pageA.getByTestId("card").locator(".title").dblclick();
  await pageA.getByLabel("Card title").fill("Buy oat milk");
  await pageA.getByLabel("Card title").press("Enter");
  await expect(pageB.getByTestId("card")).toHaveText(/Buy oat milk/);
  await waitForConvergence([pageA, pageB]);
  await Promise.all([a.close(), b.close()]);
});
