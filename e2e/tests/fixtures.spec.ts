import type { BrowserContext } from "@playwright/test";
import { expect, test } from "@statesync/playwright";

// The `newContext` and `newPage` fixtures close what they opened after the test, also after a
// test that failed: a context opened with `browser.newContext()` stays open (its app keeps
// reconnecting into later tests of the worker; a trial saw an earlier test's page in a later
// test's failure screenshot). Serial: the checks run in the same worker, after the tests that
// opened the contexts.
// No retries: a retry would run in a new worker, whose browser never saw the contexts.
test.describe.configure({ mode: "serial", retries: 0 });

const opened: BrowserContext[] = [];

test("pages and contexts are open during the test", async ({ browser, newPage, newContext }) => {
  const [a, b] = await Promise.all([newPage(), newPage()]);
  const profile = await newContext();
  const tabs = await Promise.all([profile.newPage(), profile.newPage()]);
  opened.push(a.context(), b.context(), profile);
  expect(a.context()).not.toBe(b.context()); // separate profiles, as browser.newPage()
  expect(tabs.map((t) => t.context())).toEqual([profile, profile]);
  for (const c of opened) expect(browser.contexts()).toContain(c);
});

test("a test that fails midway leaves nothing open either", async ({ newPage }) => {
  test.fail();
  const page = await newPage();
  opened.push(page.context());
  throw new Error("a test failing on purpose");
});

test("after them, each of those contexts is closed", async ({ browser }) => {
  expect(opened).toHaveLength(4);
  for (const c of opened) {
    expect(browser.contexts()).not.toContain(c);
    expect(c.pages()).toEqual([]);
  }
});
