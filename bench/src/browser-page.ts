// The page of the browser snapshot benchmark: opens a replica of the 4 MB model and records
// the main thread's long tasks (PerformanceObserver 'longtask', Chromium) while it follows the
// updates a Node writer makes. `?snapshots=off` opens it without a snapshot store (baseline).
import { exposeSynchronizer, openSynchronizer } from "@statesync/browser";
import { bigModel } from "./lib/big-model.js";

const longTasks: number[] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) longTasks.push(entry.duration);
}).observe({ type: "longtask", buffered: false });

const params = new URLSearchParams(location.search);
const sync = await openSynchronizer({
  servers: params.get("server")!,
  stream: params.get("stream")!,
  model: bigModel,
  ...(params.get("snapshots") === "off" ? { snapshots: false as const } : {}),
});
exposeSynchronizer(sync);
Object.assign(globalThis, {
  benchLongTasks: {
    reset: () => longTasks.splice(0),
    take: () => [...longTasks],
  },
});
document.body.dataset.opened = "true";
