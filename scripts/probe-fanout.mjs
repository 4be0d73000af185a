/* global process, console, URL, setTimeout */
/**
 * Probes what the fan-out follower (docs/fanout.md) relies on, on each nats-server binary given
 * (default: the system's and .servers/trixie's), and prints one line per behaviour and server:
 * RePublish enabled on an existing stream by a stream update, the republish headers,
 * `Nats-Last-Sequence` in a stream shared by several subjects, and direct get (`allow_direct`).
 * Run after `npm run build` and `bash scripts/fetch-nats-server.sh`:
 *
 *   node scripts/probe-fanout.mjs [/path/to/nats-server ...]
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { connect } from "nats";
import { findNatsServer, startNatsServer } from "@statesync/node";

const trixie = fileURLToPath(new URL("../.servers/trixie/usr/sbin/nats-server", import.meta.url));
const bins = process.argv.slice(2);
if (bins.length === 0) {
  bins.push(findNatsServer());
  if (existsSync(trixie)) bins.push(trixie);
}

const api = (err) => {
  const e = err?.api_error;
  return e ? `${e.err_code} "${e.description}"` : `${err?.code ?? ""} ${err?.message ?? err}`;
};
const hdrs = (m) =>
  m.headers ? [...m.headers.keys()].map((k) => `${k}=${m.headers.get(k)}`).join(" ") : "(none)";

/** Collects the messages of a core subscription for `ms`. */
function collect(nc, subject, ms) {
  const got = [];
  const sub = nc.subscribe(subject, { callback: (_e, m) => got.push(m) });
  return {
    done: () => new Promise((r) => setTimeout(() => (sub.unsubscribe(), r(got)), ms)),
  };
}

async function probe(bin) {
  const server = await startNatsServer({ bin });
  const lines = [];
  const say = (what, result) => lines.push(`  ${what}: ${result}`);
  const nc = await connect({ servers: server.url });
  say("version", nc.info.version);
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();

  // 1. RePublish added to an existing stream by a stream update.
  await jsm.streams.add({ name: "U", subjects: ["U.log"] });
  await js.publish("U.log", "before");
  const updated = await jsm.streams
    .update("U", { subjects: ["U.log"], republish: { src: "U.log", dest: "rp.U.log" } })
    .then(
      (si) => `ok, config.republish=${JSON.stringify(si.config.republish)}`,
      (e) => `error ${api(e)}`,
    );
  say("stream update adding republish", updated);
  let c = collect(nc, "rp.U.>", 300);
  await nc.flush();
  await js.publish("U.log", "after");
  say(
    "  messages republished after that update",
    (await c.done()).map((m) => `seq ${m.headers?.get("Nats-Sequence")}`).join(", ") || "none",
  );
  // 2. Headers, own-stream layout.
  await jsm.streams.add({
    name: "O",
    subjects: ["O.log"],
    republish: { src: "O.log", dest: "rp.O.log" },
  });
  const removed = await jsm.streams.update("O", { subjects: ["O.log"], republish: undefined }).then(
    (si) => `ok, config.republish=${JSON.stringify(si.config.republish ?? null)}`,
    (e) => `error ${api(e)}`,
  );
  say("stream update removing republish from a stream that has it", removed);
  if (removed.startsWith("ok")) {
    await jsm.streams.update("O", {
      subjects: ["O.log"],
      republish: { src: "O.log", dest: "rp.O.log" },
    });
  }
  c = collect(nc, "rp.O.>", 300);
  await nc.flush();
  await js.publish("O.log", "1", { msgID: "id-1" });
  await js.publish("O.log", "2", { msgID: "id-2" });
  for (const m of await c.done()) say(`own stream, republished ${m.subject}`, hdrs(m));

  // 3. Nats-Last-Sequence in a stream shared by several subjects.
  await jsm.streams.add({
    name: "S",
    subjects: ["S.>"],
    republish: { src: "S.>", dest: "rp.S.>" },
  });
  c = collect(nc, "rp.S.>", 300);
  await nc.flush();
  for (const [subject, data] of [
    ["S.a", "a1"],
    ["S.b", "b1"],
    ["S.b", "b2"],
    ["S.a", "a2"],
    ["S.c", "c1"],
    ["S.a", "a3"],
  ]) {
    await js.publish(subject, data);
  }
  say(
    "shared stream (S.a, S.b, S.b, S.a, S.c, S.a): Nats-Subject seq/last",
    (await c.done())
      .map(
        (m) =>
          `${m.headers?.get("Nats-Subject")} ${m.headers?.get("Nats-Sequence")}/${m.headers?.get("Nats-Last-Sequence")}`,
      )
      .join(", "),
  );
  // After a purge of S.a below its last message: what does the next S.a carry?
  await jsm.streams.purge("S", { filter: "S.a", seq: 6 });
  c = collect(nc, "rp.S.>", 300);
  await nc.flush();
  await js.publish("S.a", "a4");
  say(
    "  after a filtered purge of S.a below 6, the next S.a: seq/last",
    (await c.done())
      .map((m) => `${m.headers?.get("Nats-Sequence")}/${m.headers?.get("Nats-Last-Sequence")}`)
      .join(", "),
  );

  // 4. Direct get.
  say(
    "direct get on a stream without allow_direct",
    await jsm.direct.getMessage("S", { seq: 1 }).then(
      (m) => `ok seq ${m.seq}`,
      (e) => `error ${api(e)}`,
    ),
  );
  const upd = await jsm.streams
    .update("S", {
      subjects: ["S.>"],
      republish: { src: "S.>", dest: "rp.S.>" },
      allow_direct: true,
    })
    .then(
      (si) => `ok allow_direct=${si.config.allow_direct}`,
      (e) => `error ${api(e)}`,
    );
  say("stream update enabling allow_direct", upd);
  say(
    "direct get { seq: 2 }",
    await jsm.direct.getMessage("S", { seq: 2 }).then(
      (m) => `ok ${m.subject} seq ${m.seq} headers: ${hdrs({ headers: m.header })}`,
      (e) => `error ${api(e)}`,
    ),
  );
  say(
    "direct get { seq: 2, next_by_subj: S.a }",
    await jsm.direct.getMessage("S", { seq: 2, next_by_subj: "S.a" }).then(
      (m) => `ok ${m.subject} seq ${m.seq}`,
      (e) => `error ${api(e)}`,
    ),
  );
  say(
    "direct get { last_by_subj: S.b }",
    await jsm.direct.getMessage("S", { last_by_subj: "S.b" }).then(
      (m) => `ok ${m.subject} seq ${m.seq}`,
      (e) => `error ${api(e)}`,
    ),
  );
  say(
    "direct get of a purged sequence { seq: 1 }",
    await jsm.direct.getMessage("S", { seq: 1 }).then(
      (m) => `ok seq ${m?.seq}`,
      (e) => `error ${api(e)}`,
    ),
  );
  say(
    "direct get past the end { seq: 99 }",
    await jsm.direct.getMessage("S", { seq: 99 }).then(
      (m) => `ok seq ${m?.seq}`,
      (e) => `error ${api(e)}`,
    ),
  );
  const si = await jsm.streams.info("O");
  say(
    "stream O (created without allow_direct): config.allow_direct",
    String(si.config.allow_direct),
  );
  await nc.close();
  await server.stop();
  return lines;
}

for (const bin of bins) {
  console.log(bin);
  for (const line of await probe(bin)) console.log(line);
}
