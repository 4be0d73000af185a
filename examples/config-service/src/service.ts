/**
 * One service of the demo: follows the flags and the membership list, joins the membership and
 * heartbeats with unconditional updates, and prints what it serves its user on every change.
 * Started by demo.ts: `service.js <name> <nats-url> <user>`.
 */
import { stateHash } from "@statesync/node";
import { describeEvaluation, FlagEvaluator } from "./evaluate.js";
import { flagsModel, type FlagsSynchronizer } from "./flags-model.js";
import { runChild, toParent, type ToChild } from "./ipc.js";
import { liveMembers, membershipModel, type MembershipSynchronizer } from "./membership-model.js";
import { evaluateExpectations } from "./script.js";
import {
  FLAGS_STREAM,
  HEARTBEAT_MS,
  log,
  MEMBER_TTL_MS,
  MEMBERSHIP_STREAM,
  openReplica,
  shortHash,
  USERS,
  type UserName,
} from "./shared.js";

const [name = "service", servers = "", userName = "anna"] = process.argv.slice(2);
const user = USERS[userName as UserName];

let flags: FlagsSynchronizer;
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
  log(
    name,
    `flags rev ${flags.revision} hash ${hash} | ${membersSummary()} | ${user.email}: ${values}`,
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
  [flags, members] = await Promise.all([
    openReplica(servers, FLAGS_STREAM, flagsModel, name),
    openReplica(servers, MEMBERSHIP_STREAM, membershipModel, name),
  ]);
  for (const sync of [flags, members]) {
    sync.on("error", (error) => log(name, `${sync.model.name}: ${error.code} ${error.message}`));
  }
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
          observed: evaluateExpectations(flags.state),
        },
      ],
    });
  } else {
    clearInterval(heartbeats);
    await Promise.all([flags.close(), members.close()]);
    process.exit(0);
  }
}

runChild(name, start, handle);
