/* global process, console, URL */
/**
 * Probes the JetStream behaviours docs/servers.md compares, on each nats-server binary given
 * (default: the system's and .servers/trixie's), and prints one line per behaviour and server.
 * Run after `npm run build` and `bash scripts/fetch-nats-server.sh`:
 *
 *   node scripts/probe-nats-servers.mjs [/path/to/nats-server ...]
 *
 * Every server is a throwaway one from `startNatsServer` (free ports, temporary directory).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { connect, headers } from "nats";
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
const outcome = async (p) => {
  try {
    const ack = await p;
    return `ok seq=${ack.seq}${ack.duplicate ? " duplicate" : ""}`;
  } catch (err) {
    return `error ${api(err)}`;
  }
};

async function probe(bin) {
  const server = await startNatsServer({ bin, keepStore: true });
  const lines = [];
  const say = (what, result) => lines.push(`  ${what}: ${result}`);
  let nc = await connect({ servers: server.url });
  say("version", nc.info.version);
  let jsm = await nc.jetstreamManager();
  let js = nc.jetstream();
  await jsm.streams.add({ name: "P", subjects: ["P.>"], allow_rollup_hdrs: true });

  // Duplicate check before or after the expected-sequence check.
  await js.publish("P.a", "1", { msgID: "m1", expect: { lastSequence: 0 } });
  await js.publish("P.a", "2", { msgID: "m2", expect: { lastSequence: 1 } });
  say(
    "re-send of an appended message id with its old expected last sequence",
    await outcome(js.publish("P.a", "1", { msgID: "m1", expect: { lastSequence: 0 } })),
  );
  say(
    "re-send with its old expected last subject sequence",
    await outcome(js.publish("P.a", "2", { msgID: "m2", expect: { lastSubjectSequence: 1 } })),
  );
  say(
    "wrong expected last sequence",
    await outcome(js.publish("P.a", "3", { msgID: "m3", expect: { lastSequence: 1 } })),
  );
  say(
    "wrong expected last subject sequence",
    await outcome(js.publish("P.a", "3", { msgID: "m4", expect: { lastSubjectSequence: 1 } })),
  );

  // The duplicate table after a purge and after a restart.
  await jsm.streams.purge("P");
  say("message id re-sent after a purge", await outcome(js.publish("P.a", "x", { msgID: "m1" })));
  await js.publish("P.b", "y", { msgID: "r1" });
  await nc.close();
  await server.restart();
  nc = await connect({ servers: server.url });
  jsm = await nc.jetstreamManager();
  js = nc.jetstream();
  say("message id re-sent after a restart", await outcome(js.publish("P.b", "y", { msgID: "r1" })));
  const si = await jsm.streams.info("P");
  say("after purge + restart: first_seq/last_seq", `${si.state.first_seq}/${si.state.last_seq}`);

  // Error codes of the calls the SDK maps.
  say("stream info of a missing stream", await outcome(jsm.streams.info("NOPE")));
  say(
    "add with a different config for an existing name",
    await outcome(jsm.streams.add({ name: "P", subjects: ["Q.>"] })),
  );
  await jsm.streams.add({ name: "S", subjects: ["S.>"], max_msg_size: 16 });
  say("message over max_msg_size", await outcome(js.publish("S.a", "x".repeat(64))));
  say(
    "Nats-Expected-Last-Sequence that is not a number",
    await outcome(
      (() => {
        const h = headers();
        h.set("Nats-Expected-Last-Sequence", "abc");
        return js.publish("S.a", "x", { headers: h });
      })(),
    ),
  );

  // Republish headers.
  await jsm.streams.add({
    name: "R",
    subjects: ["R.>"],
    republish: { src: "R.>", dest: "out.>" },
  });
  const sub = nc.subscribe("out.>", { max: 2 });
  await js.publish("R.a", "1");
  await js.publish("R.a", "2");
  for await (const m of sub) {
    if (m.headers?.get("Nats-Sequence") !== "2") continue;
    say(
      "republish headers of the 2nd message",
      [...m.headers.keys()].map((k) => `${k}=${m.headers.get(k)}`).join(" "),
    );
  }

  // Consumers with several filter subjects.
  say(
    "consumer with filter_subjects [P.a, P.b]",
    await jsm.consumers.add("P", { filter_subjects: ["P.a", "P.b"], ack_policy: "none" }).then(
      (ci) => `ok filter_subjects=${JSON.stringify(ci.config.filter_subjects)}`,
      (e) => `error ${api(e)}`,
    ),
  );
  await nc.close();
  await server.stop({ keepStore: false });

  // sync_interval (durability) in the server config.
  say(
    "jetstream { sync_interval: always }",
    await startNatsServer({ bin, extraConfig: "jetstream { sync_interval: always }" }).then(
      async (s) => (await s.stop(), "accepted"),
      (e) => `refused: ${/unknown field[^\n]*|[^\n]*sync_interval[^\n]*/.exec(String(e))?.[0]}`,
    ),
  );
  return lines;
}

for (const bin of bins) {
  console.log(bin);
  for (const line of await probe(bin)) console.log(line);
}
