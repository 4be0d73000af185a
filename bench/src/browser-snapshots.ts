// Browser snapshot benchmark (issue 10, case 9): long tasks on a page's main thread while it
// follows 1,000 live updates of a ~4 MB state, with the default snapshot saving and without
// snapshots. Not one of the seven benchmarks of main.ts: run it alone,
//   npm run bench:browser                     (this checkout's @statesync/browser)
//   npm run bench:browser -- --browser <dir>  (another @statesync/browser src/, e.g. an older one)
// Needs the system Chromium (CHROMIUM_PATH or /usr/bin/chromium) and nats-server.
import { chromium } from "@playwright/test";
import { openSynchronizer, startNatsServer } from "@statesync/node";
import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";
import { resolve } from "node:path";
import { bundlePage, servePage } from "./lib/page-server.js";
import { bigModel } from "./lib/big-model.js";

const UPDATES = 1_000;
const args = process.argv.slice(2);
const browserSrc = args.includes("--browser")
  ? resolve(args[args.indexOf("--browser") + 1]!)
  : undefined;

function pageScript(): Promise<string> {
  const alias: Record<string, string> = browserSrc
    ? { "@statesync/browser": resolve(browserSrc, "index.ts") }
    : {};
  return bundlePage("browser-page.ts", alias);
}

interface Figures {
  mode: string;
  seconds: number;
  longTasks: number;
  over100: number;
  maxMs: number;
  totalMs: number;
  snapshotsSaved: number;
  stateBytes: number;
}

async function run(mode: "on" | "off", script: string): Promise<Figures> {
  const server = await startNatsServer();
  const http = await servePage(script);
  const browser = await chromium.launch(systemChromiumLaunchOptions());
  const stream = `bench_browser_${mode}_${Date.now().toString(36)}`;
  const writer = await openSynchronizer({
    servers: server.url,
    stream,
    model: bigModel,
    snapshots: false,
    compaction: false,
  });
  try {
    const page = await browser.newPage();
    await page.goto(
      `${http.base}/?server=${encodeURIComponent(server.wsUrl)}&stream=${stream}&snapshots=${mode}`,
    );
    await page.waitForFunction(
      () => (globalThis as any).__statesync__?.default?.sync.status === "live",
      undefined,
      { timeout: 60_000 },
    );
    await page.waitForTimeout(1_000); // let the opening settle (its first save included)
    await page.evaluate(() => (globalThis as any).benchLongTasks.reset());
    const started = Date.now();
    for (let n = 0; n < UPDATES; n++) await writer.updateUnconditionally("touch", { n });
    const target = writer.revision;
    await page.waitForFunction(
      (t) => (globalThis as any).__statesync__.default.sync.revision >= t,
      target,
      { timeout: 120_000 },
    );
    const seconds = (Date.now() - started) / 1000;
    await page.waitForTimeout(2_000); // the last save
    const { tasks, saved, bytes } = await page.evaluate(() => {
      const { sync } = (globalThis as any).__statesync__.default;
      return {
        tasks: (globalThis as any).benchLongTasks.take() as number[],
        saved: sync.stats.snapshotsSaved as number,
        bytes: JSON.stringify(sync.state).length,
      };
    });
    return {
      mode: mode === "on" ? "default snapshots" : "snapshots: false",
      seconds,
      longTasks: tasks.length,
      over100: tasks.filter((d) => d > 100).length,
      maxMs: Math.round(Math.max(0, ...tasks)),
      totalMs: Math.round(tasks.reduce((a, b) => a + b, 0)),
      snapshotsSaved: saved,
      stateBytes: bytes,
    };
  } finally {
    await writer.close();
    await browser.close();
    http.close();
    await server.stop();
  }
}

const script = await pageScript();
console.log(`@statesync/browser: ${browserSrc ?? "this checkout (dist)"}; ${UPDATES} live updates`);
const rows = [await run("off", script), await run("on", script)];
console.table(rows);
