// Browser pending-queue startup (issue 12: "a page with 20,000 queued edits opens and renders in
// a few seconds at most"): a page of the collab board's model with N edits in its IndexedDB
// queue opens offline; how long until `openSynchronizer` resolves (restore + load of the queue),
// and until the optimistic view with all N is computed. Beside it, the same page with an empty
// queue. Run alone: npm run bench:browser-pending [-- --n 20000]. Needs the system Chromium.
import { chromium, type Page } from "@playwright/test";
import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";
import { bundlePage, servePage } from "./lib/page-server.js";

const args = process.argv.slice(2);
const N = args.includes("--n") ? Number(args[args.indexOf("--n") + 1]) : 20_000;

const http = await servePage(await bundlePage("browser-pending-page.ts"));
const base = http.base;
const browser = await chromium.launch(systemChromiumLaunchOptions());

async function result(page: Page, query: string): Promise<any> {
  await page.goto(`${base}/?${query}`);
  await page.waitForFunction(() => (globalThis as any).benchResult !== undefined, undefined, {
    timeout: 600_000,
  });
  return page.evaluate(() => (globalThis as any).benchResult);
}

try {
  const rows = [];
  for (const n of [0, N]) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const started = Date.now();
    if (n > 0) await result(page, `phase=fill&n=${n}`);
    const fillS = (Date.now() - started) / 1000;
    const opened = await result(page, "phase=open");
    rows.push({
      pending: opened.pending,
      "open (ms)": Math.round(opened.openMs),
      "optimistic view (ms)": Math.round(opened.viewMs),
      "open + view (ms)": Math.round(opened.openMs + opened.viewMs),
      cards: opened.cards,
      "filling the store (s)": n > 0 ? fillS.toFixed(1) : "-",
    });
    await context.close();
  }
  console.log(
    `a board (the collab board's addCard), ${N} pending edits in IndexedDB, page opened offline`,
  );
  console.table(rows);
  const [empty, full] = rows;
  console.log(
    `ratio open + view, ${N} pending / empty: ${(full!["open + view (ms)"] / Math.max(1, empty!["open + view (ms)"])).toFixed(1)}x`,
  );
} finally {
  await browser.close();
  http.close();
}
