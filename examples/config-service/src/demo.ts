/**
 * The statesync demo (`npm run demo`): a throwaway nats-server, 3 services and 1 admin sharing
 * a flagd flag configuration and a membership list. Exits 0 when every replica ends identical
 * and serves the expected flag values, 1 otherwise, 130 when interrupted.
 */
import { startNatsServer } from "@statesync/node";
import { Child } from "./child.js";
import { initialFlags } from "./flags.js";
import type { ReplicaReport } from "./ipc.js";
import { log, SERVICES } from "./shared.js";
import { summarize } from "./summary.js";

const DEADLINE_MS = 28_000;
const STEP_TIMEOUT_MS = 15_000;

const HEADER = `
statesync demo: feature flags shared by a fleet of services
------------------------------------------------------------
A throwaway nats-server (JetStream) stores two append-only logs, one per shared state:
  feature-flags  a flagd flag definition file (${Object.keys(initialFlags.flags).length} flags), changed by an admin
  membership     which services are running, kept fresh by heartbeats
3 services each keep a local replica of both states, join the membership and heartbeat with
UNCONDITIONAL updates (they never conflict), and on every flag change print what they serve
their user. An admin, in two sessions at once, changes flags with CONDITIONAL updates: an
update based on an old revision conflicts and is retried on the newer state ("attempts").
At the end every replica reports its revision and state hash: they must all be equal.
`;

let server: Awaited<ReturnType<typeof startNatsServer>> | undefined;
const children: Child[] = [];
let cleaning: Promise<void> | undefined;

/** Stops every child and the server; safe to call more than once. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(children.map((child) => child.stop(2_000)));
    await server?.stop();
  })();
  return cleaning;
}

function spawn(name: string, script: string, args: string[]): Child {
  const child = new Child(name, script, args, (error) => fail(error.message, 1));
  children.push(child);
  return child;
}

async function everyone<T>(each: (child: Child) => Promise<T>): Promise<T[]> {
  return Promise.all(children.map(each));
}

async function run(): Promise<boolean> {
  console.log(HEADER);
  server = await startNatsServer();
  const url = server.url;
  log("demo", `nats-server listening on ${url}; starting ${SERVICES.length} services`);
  const services = SERVICES.map((s) => spawn(s.name, "./service.js", [s.name, url, s.user]));
  await Promise.all(services.map((service) => service.next("ready", STEP_TIMEOUT_MS)));
  log("demo", "services ready; starting the admin");
  const admin = spawn("admin", "./admin.js", [url, String(SERVICES.length)]);
  await admin.next("done", STEP_TIMEOUT_MS);

  log("demo", "admin done; stopping heartbeats and asking every replica for its state");
  for (const child of children) child.send({ type: "quiesce" });
  await everyone((child) => child.next("quiesced", STEP_TIMEOUT_MS));
  for (const child of children) child.send({ type: "report" });
  const answers = await everyone((child) => child.next("report", STEP_TIMEOUT_MS));
  const reports: ReplicaReport[] = answers.flatMap((answer) => answer.replicas);

  const summary = summarize(reports);
  console.log(["", "Summary", "-------", ...summary.lines].join("\n"));
  await cleanup();
  console.log(
    summary.ok
      ? "\nOK: all replicas identical, expected flag values served."
      : "\nFAILED: replicas differ or serve unexpected values (see above).",
  );
  return summary.ok;
}

let failed = false;

function fail(message: string, code: number): void {
  if (failed) return;
  failed = true;
  console.error(`\ndemo: ${message}`);
  setTimeout(() => process.exit(code), 5_000).unref();
  void cleanup().finally(() => process.exit(code));
}

process.once("SIGINT", () => fail("interrupted; stopping every process", 130));
process.once("SIGTERM", () => fail("terminated; stopping every process", 143));
const deadline = setTimeout(() => fail(`did not finish within ${DEADLINE_MS} ms`, 1), DEADLINE_MS);

run().then(
  (ok) => {
    if (failed) return; // fail() is stopping everything and sets the exit code
    clearTimeout(deadline);
    process.exit(ok ? 0 : 1);
  },
  (error: unknown) => fail(error instanceof Error ? error.message : String(error), 1),
);
