/**
 * The admin of the demo: two sessions (two replicas of the flags, two client ids) run the
 * scripted flag changes of script.ts with conditional updates, some at the same time, so some
 * conflict and are retried. Started by demo.ts: `admin.js <nats-url> <services>`.
 */
import { stateHash } from "@statesync/node";
import { FlagCommandError, flagsModel, type FlagsSynchronizer } from "./flags-model.js";
import { runChild, toParent, type ToChild } from "./ipc.js";
import { liveMembers, membershipModel, type MembershipSynchronizer } from "./membership-model.js";
import { evaluateExpectations, SCRIPT, type AdminSession, type Change } from "./script.js";
import { FLAGS_STREAM, log, MEMBER_TTL_MS, MEMBERSHIP_STREAM, openReplica } from "./shared.js";

const [servers = "", serviceCount = "3"] = process.argv.slice(2);
const STEP_PAUSE_MS = 500;

let members: MembershipSynchronizer;
const sessions = {} as Record<AdminSession, FlagsSynchronizer>;

/** Resolves once `count` members are live (checked on each membership change). */
function waitForLiveMembers(count: number, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const live = liveMembers(members.state, Date.now(), MEMBER_TTL_MS);
      if (live.length < count) return;
      stop();
      resolve(live);
    };
    const unsubscribe = members.subscribe(check);
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`fewer than ${count} live members after ${timeoutMs} ms`));
    }, timeoutMs);
    const stop = (): void => {
      clearTimeout(timer);
      unsubscribe();
    };
    check();
  });
}

/** Runs one change; returns whether it was committed. */
async function apply(change: Change): Promise<boolean> {
  try {
    const result = await change.run(sessions[change.session]);
    if (change.rejected) throw new Error(`"${change.label}" should have been rejected`);
    const retried = result.attempts > 1 ? ": conflicted, retried on the newer state" : "";
    log(
      change.session,
      `${change.label} → rev ${result.revision} (attempts ${result.attempts}${retried})`,
    );
    return true;
  } catch (error) {
    if (!change.rejected || !(error instanceof FlagCommandError)) throw error;
    log(change.session, `${change.label} → rejected: ${error.message}; nothing written`);
    return false;
  }
}

async function start(): Promise<void> {
  [members, sessions["admin-a"], sessions["admin-b"]] = await Promise.all([
    openReplica(servers, MEMBERSHIP_STREAM, membershipModel, "admin"),
    openReplica(servers, FLAGS_STREAM, flagsModel, "admin-a"),
    openReplica(servers, FLAGS_STREAM, flagsModel, "admin-b"),
  ]);
  const live = await waitForLiveMembers(Number(serviceCount), 10_000);
  log("admin", `${live.length} services live (${live.join(", ")}); starting the flag changes`);
  let changes = 0;
  let rejected = 0;
  for (const step of SCRIPT) {
    const committed = await Promise.all(step.map(apply));
    changes += committed.filter(Boolean).length;
    rejected += committed.filter((ok) => !ok).length;
    await new Promise((resolve) => setTimeout(resolve, STEP_PAUSE_MS));
  }
  const conflicts = sessions["admin-a"].stats.conflicts + sessions["admin-b"].stats.conflicts;
  log(
    "admin",
    `done: ${changes} changes committed, ${rejected} rejected, ${conflicts} conflicts retried`,
  );
  toParent({ type: "done", changes, rejected, conflicts });
}

async function handle(message: ToChild): Promise<void> {
  if (message.type === "quiesce") {
    toParent({ type: "quiesced" });
  } else if (message.type === "report") {
    const [a, b] = [sessions["admin-a"], sessions["admin-b"]];
    await Promise.all([a.synced(), b.synced(), members.synced()]);
    const report = (flags: FlagsSynchronizer) => ({
      revision: flags.revision,
      hash: stateHash(flags.state),
    });
    toParent({
      type: "report",
      replicas: [
        {
          replica: "admin",
          membership: { revision: members.revision, hash: stateHash(members.state) },
        },
        { replica: "admin-a", flags: report(a), observed: evaluateExpectations(a.state) },
        { replica: "admin-b", flags: report(b), observed: evaluateExpectations(b.state) },
      ],
    });
  } else if (message.type === "exit") {
    await Promise.all([members.close(), ...Object.values(sessions).map((s) => s.close())]);
    process.exit(0);
  }
}

runChild("admin", start, handle);
