import { createSynchronizer, defineModel, MemoryLog } from "./dist/index.js";
import { z } from "zod";
const Tree = z.lazy(() => z.object({ c: z.optional(Tree) }));
const m = defineModel({
  name: "c",
  state: z.object({ t: process.env.ANY ? z.any() : Tree }),
  initial: { t: {} },
  commands: {
    deep: { args: z.object({ n: z.number() }), apply(d, { n }) { let o = {}; const root = o; for (let i = 0; i < n; i++) { o.c = {}; o = o.c; } d.t = root; } },
    flat: { args: z.object({}), apply(d) { d.t = {}; } },
  },
});
const log = new MemoryLog();
const a = await createSynchronizer({ log, model: m });
const b = await createSynchronizer({ log: log.handle(), model: m });
a.on("error", e=>console.log("ev a", e.code, JSON.stringify(e.message).slice(0,200)));
b.on("error", e=>console.log("ev b", e.code, JSON.stringify(e.message).slice(0,200)));
for (const n of (process.env.NS ?? "5000").split(",").map(Number)) {
  try { const r = await a.updateUnconditionally("deep", { n }); console.log(n, "ok", JSON.stringify(r), a.revision); } catch (e) { console.log(n, "ERR uncond", e.code, JSON.stringify(e.message).slice(0,300)); }
}
try { const r = await a.updateUnconditionally("flat", {}); console.log("flat ok", JSON.stringify(r), a.revision); } catch (e) { console.log("flat ERR", e.code, e.message.slice(0,200)); }
await new Promise(r=>setTimeout(r,500));
console.log("final", a.revision, b.revision, a.status, b.status);
await a.close(); await b.close();
