import { createSynchronizer, defineModel, MemoryLog } from "./dist/index.js";
import { z } from "zod";
const Tree = z.lazy(() => z.object({ c: z.optional(Tree) }));
const m = defineModel({
  name: "c",
  state: z.object({ t: Tree }),
  initial: { t: {} },
  commands: {
    deep: { args: z.object({ n: z.number() }), apply(d, { n }) { let o = {}; const root = o; for (let i = 0; i < n; i++) { o.c = {}; o = o.c; } d.t = root; } },
  },
});
const depth = (s) => { let k = 0, o = s.t; while (o && o.c) { k++; o = o.c; } return k; };
const log = new MemoryLog();
const a = await createSynchronizer({ log, model: m });
a.on("error", e=>console.log("ev", e.code, JSON.stringify(e.message), e.cause?.stack?.split("\n").slice(0,12).join("\n")));
for (const n of [5000]) {
  try { const r = await a.updateUnconditionally("deep", { n }); console.log(n, "ok", r?.revision, a.revision, depth(a.state), a.status); } catch (e) { console.log(n, "ERR uncond", e.code, JSON.stringify(e.message)); }
}
await new Promise(r=>setTimeout(r,200));
console.log("final", a.revision, depth(a.state), JSON.stringify(a.status));
await a.close();
