import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { connect } from "nats";
import { startNatsServer, openSynchronizer, defineModel } from "@statesync/node";
import { z } from "zod";
const server = await startNatsServer({ storeDir: mkdtempSync(path.join(tmpdir(), "fg-")) });
const model = defineModel({ name: "c", version: 1, state: z.object({ n: z.number() }), initial: { n: 0 }, commands: { inc: { args: z.object({}), apply: (d) => { d.n += 1; } } } });
const events = [];
const a = await openSynchronizer({ servers: server.url, stream: "FG", model, onError: (e) => events.push(`a ${e.code}: ${e.message}`), onStatus: (s) => events.push(`a status ${s}`) });
await a.update("inc", {});
const nc = await connect({ servers: server.url });
const jsm = await nc.jetstreamManager();
const info = await jsm.streams.info("FG");
console.log("subjects", info.config.subjects);
await jsm.streams.update("FG", { ...info.config, subjects: [...info.config.subjects, "FOREIGN"] });
await nc.jetstream().publish("FOREIGN", new TextEncoder().encode("hello"));
await jsm.streams.update("FG", { ...info.config });
const t0 = Date.now();
try { await a.update("inc", {}); console.log("a update ok", a.revision, a.state); } catch (e) { console.log("a update failed", e.code, e.message, Date.now() - t0); }
try { const b = await openSynchronizer({ servers: server.url, stream: "FG", model }); console.log("b opened", b.revision, b.state); await b.update("inc", {}); console.log("b ok", b.state); await b.close(); } catch (e) { console.log("b failed", e.code, e.message); }
await new Promise((r) => setTimeout(r, 1000));
console.log(events.join("\n"));
await a.close(); await nc.close(); await server.stop();
