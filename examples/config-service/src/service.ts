/**
 * One service of the demo: follows the flags and the membership list, joins the membership and
 * heartbeats with unconditional updates, and prints what it serves its user on every change.
 * Started by demo.ts: `service.js <name> <nats-url> <user> [flags-version] [upgrade]`, where
 * `flags-version` is the `feature-flags` model version it runs (1, the default, or 2) and
 * `upgrade` is `on-open` (default) or `manual` (docs/versions.md; the README's rolling deploy).
 */
import { stateHash } from "@statesync/node";
import { describeEvaluation, FlagEvaluator } from "./evaluate.js";
import type { FlagdConfig } from "./flagd-schema.js";
import { ServiceFlags, type FlagsReplica } from "./flags-replica.js";
import { runChild, toParent, type ToChild } from "./ipc.js";
import { liveMembers, membershipModel, type MembershipSynchronizer } from "./membership-model.js";
import { evaluateExpectations } from "./script.js";
import {
  HEARTBEAT_MS,
  log,
  MEMBER_TTL_MS,
  MEMBERSHIP_STREAM,
  openReplica,
  shortHash,
  USERS,
  type UserName,
} from "./shared.js";

const [name = "service", servers = "", userName = "anna", version = "1", upgrade = "on-open"] =
  process.argv.slice(2);
const user = USERS[userName as UserName];

let service: ServiceFlags;
let flags: FlagsReplica;
let members: MembershipSynchronizer;
let heartbeats: NodeJS.Timeout | undefined;
let lastHeartbeat: Promise<unknown> = Promise.resolve();
let lastLive = "";
const evaluator = new FlagEvaluator();

function membersSummary(): string {
  const live = liveMembers(members.state, Date.now(), MEMBER_TTL_MS);
  return `members rev ${members.revision} (${live.length} live)`;
}

function printFlags(): void {
  const shown = [
    ["new-checkout", false],
    ["dark-mode", false],
    ["checkout-button-color", ""],
  ] as const;
  const values = shown
    .map(([flag, fallback]) => {
      const evaluation = evaluator.evaluate(flags.state, flag, user, fallback);
      return `${flag}=${describeEvaluation(evaluation)}`;
    })
    .join(" ");
  const hash = shortHash(stateHash(flags.state));
  const pending = flags.upgradePending ? " (upgrade pending)" : "";
  log(
    name,
    `flags v${flags.model.version}${pending} rev ${flags.revision} hash ${hash} | ` +
      `${membersSummary()} | ${user.email}: ${values}`,
  );
}

/** Prints the membership only when the set of live members changes (not every heartbeat). */
function printMembersIfChanged(): void {
  const live = liveMembers(members.state, Date.now(), MEMBER_TTL_MS).join(", ");
  if (live === lastLive) return;
  lastLive = live;
  log(name, `${membersSummary()}: ${live || "nobody"}`);
}

async function start(): Promise<void> {
  if ((version !== "1" && version !== "2") || (upgrade !== "on-open" && upgrade !== "manual")) {
    throw new Error(
      `flags version 1 or 2 and upgrade on-open or manual, not ${version} ${upgrade}`,
    );
  }
  [service, members] = await Promise.all([
    ServiceFlags.open(servers, name, Number(version) as 1 | 2, upgrade),
    openReplica(servers, MEMBERSHIP_STREAM, membershipModel, name),
  ]);
  flags = service.sync;
  for (const sync of [flags, members]) {
    sync.on("error", (error) => log(name, `${sync.model.name}: ${error.code} ${error.message}`));
  }
  flags.on("status", (status) => log(name, `flags ${status}`));
  flags.subscribe(printFlags);
  members.subscribe(printMembersIfChanged);
  await members.updateUnconditionally("join", { member: name, role: "shop-api", pid: process.pid });
  heartbeats = setInterval(() => {
    lastHeartbeat = members
      .updateUnconditionally("heartbeat", { member: name })
      .catch((error: Error) => log(name, `heartbeat failed: ${error.message}`));
  }, HEARTBEAT_MS);
  printFlags();
  toParent({ type: "ready" });
}

async function handle(message: ToChild): Promise<void> {
  if (message.type === "quiesce") {
    clearInterval(heartbeats);
    await lastHeartbeat;
    toParent({ type: "quiesced" });
  } else if (message.type === "report") {
    await Promise.all([flags.synced(), members.synced()]);
    toParent({
      type: "report",
      replicas: [
        {
          replica: name,
          flags: { revision: flags.revision, hash: stateHash(flags.state) },
          membership: { revision: members.revision, hash: stateHash(members.state) },
          observed: evaluateExpectations(flags.state as unknown as FlagdConfig),
        },
      ],
    });
  } else if (message.type === "command") {
    toParent(await service.act(message.name, message.args));
  } else if (message.type === "upgrade") {
    toParent(await service.act("upgrade", null));
  } else if (message.type === "inspect") {
    toParent({ type: "inspection", flags: await service.inspect(name, message.atLeast) });
  } else {
    clearInterval(heartbeats);
    await Promise.all([flags.close(), members.close()]);
    process.exit(0);
  }
}

runChild(name, start, handle);
