// Cross-tab handoff benchmark: N tabs of one profile (one leads and holds the connection, the
// others send through it, each shows the others' pending edits: docs/offline.md, "Tabs") each
// make E edits, started round-robin (tab 0's first, tab 1's first, …; none awaited), so every
// tab's queue holds edits queued between the other tabs' and the queues hand over to each other
// edit by edit (they push in the order the edits were made). Reports
// the wall time, ms per edit, and the main-thread CPU of the tabs (CDP `Performance.getMetrics`
// TaskDuration, summed over the tabs, during the edits). Run alone:
//   npm run bench:tabs [-- --tabs 3 --edits 300]
// Needs the system Chromium (CHROMIUM_PATH or /usr/bin/chromium) and nats-server.
import { chromium, type Page } from "@playwright/test";
import { startNatsServer } from "@statesync/node";
import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";
import { bundlePage, servePage } from "./lib/page-server.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) =>
  args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback;
const TABS = arg("--tabs", 3);
const EDITS = arg("--edits", 300);
/** With `--gap ms`, each tab starts its edits itself, one every `ms` (0: all at once), all tabs together. */
const GAP = args.includes("--gap") ? arg("--gap", 0) : undefined;
/**
 * With `--offline`, the server is stopped (SIGSTOP) while the edits are made, and the figures
 * count from when it resumes: every tab then holds all its edits pending, and the queues hand
 * over edit by edit while they push (the trial's case: about 100 ms a handoff).
 */
const OFFLINE = args.includes("--offline");

const script = await bundlePage("browser-tabs-page.ts");
const server = await startNatsServer();
const http = await servePage(script);
const browser = await chromium.launch(systemChromiumLaunchOptions());

/** A reader of the main thread's busy time of `page` since it was made, ms (CDP TaskDuration). */
async function cpuMeter(page: Page): Promise<() => Promise<number>> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  return async () => {
    const { metrics } = await cdp.send("Performance.getMetrics");
    return 1000 * (metrics.find((m) => m.name === "TaskDuration")?.value ?? 0);
  };
}

try {
  const context = await browser.newContext();
  const stream = `bench_tabs_${Date.now().toString(36)}`;
  const url = `${http.base}/?server=${encodeURIComponent(server.wsUrl)}&stream=${stream}`;
  const pages: Page[] = [];
  for (let t = 0; t < TABS; t++) {
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForFunction(
      () => (globalThis as any).__statesync__?.default?.sync.status === "live",
      undefined,
      { timeout: 60_000 },
    );
    pages.push(page);
  }
  await pages[0]!.waitForTimeout(1_000); // let the openings settle
  const meters = await Promise.all(pages.map(cpuMeter));
  let cpuBefore = await Promise.all(meters.map((m) => m()));
  let started = Date.now();
  if (OFFLINE) await server.kill("SIGSTOP");
  if (GAP === undefined) {
    for (let i = 0; i < EDITS; i++) {
      for (let t = 0; t < TABS; t++) {
        await pages[t]!.evaluate((id) => (globalThis as any).benchStart(id), `t${t}-${i}`);
      }
    }
  } else {
    await Promise.all(
      pages.map((p, t) =>
        p.evaluate(([prefix, n, gap]) => (globalThis as any).benchRun(prefix, n, gap), [
          `t${t}-`,
          EDITS,
          GAP,
        ] as const),
      ),
    );
  }
  if (OFFLINE) {
    await pages[0]!.waitForTimeout(1_000); // the views of the others' edits settle
    cpuBefore = await Promise.all(meters.map((m) => m()));
    started = Date.now();
    await server.kill("SIGCONT");
  }
  const committed = await Promise.all(
    pages.map((p) => p.evaluate(() => (globalThis as any).benchSettle() as Promise<number>)),
  );
  const seconds = (Date.now() - started) / 1000;
  const cpuAfter = await Promise.all(meters.map((m) => m()));
  if (committed.some((c) => c !== EDITS)) throw new Error(`committed: ${committed.join(", ")}`);
  const total = TABS * EDITS;
  // Every tab shows every edit once they all committed.
  for (const p of pages) {
    await p.waitForFunction((n) => (globalThis as any).benchShown() === n, total, {
      timeout: 60_000,
    });
  }
  const cpu = cpuAfter.map((a, i) => a - cpuBefore[i]!);
  const cpuSum = cpu.reduce((a, b) => a + b, 0);
  const how =
    GAP === undefined ? "started round-robin across the tabs" : `one every ${GAP} ms in each tab`;
  console.log(
    `${TABS} tabs × ${EDITS} edits (addCard, ${how})${OFFLINE ? ", made offline; from the server's resumption" : ""}`,
  );
  console.table([
    {
      "total (s)": seconds.toFixed(1),
      "ms per edit": ((seconds * 1000) / total).toFixed(1),
      "main-thread CPU, all tabs (s)": (cpuSum / 1000).toFixed(1),
      "CPU per tab (s)": cpu.map((c) => (c / 1000).toFixed(1)).join(" / "),
      "CPU ms per edit": (cpuSum / total).toFixed(1),
    },
  ]);
  await context.close();
} finally {
  await browser.close();
  http.close();
  await server.stop();
}
