import { expect, it, vi } from "vitest";
import { main } from "../src/pending-startup.js";

// `npm run bench:pending` queued its edits through one MemoryLog and drained them into a fresh
// one: queued updates are bound to their log (docs/offline.md), so the drain refused them all
// with LOG_REPLACED and the benchmark crashed before printing its drain figures. It runs here
// with a few hundred edits so that it cannot rot unseen again (no figure is checked: the drain
// throws when the state it leaves is not the edits' one).
it("runs to its end with a few hundred pending edits", async () => {
  const lines: string[] = [];
  vi.spyOn(console, "log").mockImplementation((...args) => void lines.push(args.join(" ")));
  try {
    await main(300);
  } finally {
    vi.restoreAllMocks();
  }
  expect(lines.some((l) => l.includes("draining 300 pending"))).toBe(true);
  expect(lines.some((l) => l.includes("Large state: draining 300"))).toBe(true);
}, 120_000);
