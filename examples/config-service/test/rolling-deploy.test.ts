import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startNatsServer, stateHash, type NatsServer } from "@statesync/node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Child } from "../dist/child.js";
import type { FlagdConfig, Json } from "../src/flagd-schema.js";
import { UNASSIGNED, withOwners } from "../src/flags-model-v2.js";
import { initialFlags } from "../src/flags.js";
import type { FlagsInspection } from "../src/ipc.js";

/**
 * The README's rolling deploy of the flags from model version 1 to 2 (docs/versions.md), with
 * real service processes (dist/service.js) on a real nats-server: services on version 1, one
 * restarted on version 2, the switch, then the rest. Every state each replica held is recorded,
 * and at every revision the replicas agree (a version-2 replica waiting to switch shows exactly
 * the version-1 state migrated) or one of them has stopped.
 */

const built = fileURLToPath(new URL("../dist/service.js", import.meta.url));
/** Upper bound for one answer of a service (a failure bound, not a measurement). */
const ANSWER_MS = 30_000;

let server: NatsServer;
let children: Child[] = [];
let failures: Error[] = [];
beforeEach(async () => {
  expect(existsSync(built), "build first: npx tsc -b examples/config-service").toBe(true);
  server = await startNatsServer();
});
afterEach(async () => {
  await Promise.all(children.map((child) => child.stop(5_000)));
  children = [];
  failures = [];
  await server?.stop();
});

/** Starts a service (as demo.ts does) running flags model `version`; resolves once it is ready. */
async function service(
  name: string,
  user: string,
  version: 1 | 2,
  upgrade: "on-open" | "manual" = "manual",
): Promise<Child> {
  const args = [name, server.url, user, String(version), upgrade];
  const child = new Child(name, "service.js", args, (error) => failures.push(error));
  children.push(child);
  await child.next("ready", ANSWER_MS);
  return child;
}

/** An admin action on a service: a conditional update (or `"upgrade"`); revision or refusal. */
async function act(child: Child, name: string, args: unknown = null) {
  const command = { type: "command" as const, name, args: args as Json };
  child.send(name === "upgrade" ? { type: "upgrade" } : command);
  const { revision, code } = await child.next("command-result", ANSWER_MS);
  return { revision, code };
}

const inspections: FlagsInspection[] = [];
/** What a service's replica holds once it has consumed `atLeast` (or has stopped before it). */
async function inspect(child: Child, atLeast: number): Promise<FlagsInspection> {
  child.send({ type: "inspect", atLeast });
  const { flags } = await child.next("inspection", ANSWER_MS);
  inspections.push(flags);
  return flags;
}

/**
 * Checks every state every inspected replica held, revision by revision: version-1 replicas
 * agree with each other, and every state read as version 2 (a version-1 state migrated with
 * `withOwners`, as the switch does) is the same for all replicas at that revision, whichever
 * version they ran and whether they had switched. Returns, per revision, who held it.
 */
function checkAgreement(): Map<number, Set<string>> {
  const seen = new Map<number, { v1: Set<string>; v2: Set<string>; log: Set<number> }>();
  const holders = new Map<number, Set<string>>();
  for (const { replica, version, observations } of inspections) {
    for (const { revision, logVersion, state } of observations) {
      const at = seen.get(revision) ?? { v1: new Set(), v2: new Set(), log: new Set() };
      seen.set(revision, at);
      at.log.add(logVersion);
      if (version === 1) {
        expect(logVersion).toBe(1);
        at.v1.add(stateHash(state));
        at.v2.add(stateHash(withOwners(state as FlagdConfig)));
      } else {
        at.v2.add(stateHash(state));
      }
      holders.set(revision, (holders.get(revision) ?? new Set()).add(`${replica} v${version}`));
    }
  }
  for (const [revision, at] of seen) {
    expect(at.v1.size, `version-1 states at revision ${revision}`).toBeLessThanOrEqual(1);
    expect(at.v2.size, `states read as version 2 at revision ${revision}`).toBe(1);
    expect(at.log.size, `log versions at revision ${revision}`).toBe(1);
  }
  return holders;
}

/** The document the admin loads: the example's flags, one of them already naming its owner. */
const DOCUMENT: FlagdConfig = JSON.parse(JSON.stringify(initialFlags)) as FlagdConfig;
DOCUMENT.flags["new-checkout"]!.metadata = { owner: "checkout-team" };

describe("rolling deploy of the flags model from version 1 to 2", () => {
  it('upgrade: "manual": v2 reads the v1 log migrated up, switches once, v1 services stop, then upgrade', async () => {
    inspections.length = 0;
    const [a, b, c] = await Promise.all([
      service("service-a", "anna", 1),
      service("service-b", "dave", 1),
      service("service-c", "carol", 1),
    ]);
    const loaded = await act(a, "replaceDocument", { document: DOCUMENT });
    const half = await act(b, "rollOut", { flag: "new-checkout", variant: "on", percent: 50 });
    expect(half.revision).toBe(loaded.revision! + 1);
    await inspect(c, half.revision!);

    // 1. Restart C on version 2, `upgrade: "manual"`: it reads the version-1 log migrated up.
    await c.stop(5_000);
    const c2 = await service("service-c", "carol", 2);
    const c2Before = await inspect(c2, half.revision!);
    expect(c2Before).toMatchObject({ version: 2, upgradePending: true, status: "live" });
    const aBefore = await inspect(a, half.revision!);
    expect(c2Before.revision).toBe(aBefore.revision);
    expect(c2Before.observed).toEqual(aBefore.observed); // same evaluations as version 1
    const migrated = c2Before.observations.at(-1)!.state as FlagdConfig;
    expect(migrated.flags["new-checkout"]!.metadata).toMatchObject({ owner: "checkout-team" });
    expect(migrated.flags["dark-mode"]!.metadata).toEqual({ owner: UNASSIGNED });

    // Its writes wait for the switch; A and B keep writing, and C follows them.
    const refused = await act(c2, "setOwner", { flag: "dark-mode", owner: "web-team" });
    expect(refused.code).toBe("UPGRADE_PENDING");
    const dark = await act(a, "setFlagState", { flag: "dark-mode", state: "ENABLED" });
    expect(dark.revision).toBe(half.revision! + 1); // the refused write appended nothing
    const full = await act(b, "rollOut", { flag: "new-checkout", variant: "on", percent: 100 });
    const c2Following = await inspect(c2, full.revision!);
    expect(c2Following).toMatchObject({ revision: full.revision, upgradePending: true });
    expect(c2Following.observed["dark-mode for carol"]).toBe(true);
    expect(c2Following.observed["new-checkout for carol"]).toBe(true);

    // 2. The switch, once, by C.
    const switched = await act(c2, "upgrade");
    expect(switched.revision).toBe(full.revision! + 1);
    const again = await act(c2, "upgrade"); // already at version 2: nothing more is written
    expect(again.revision).toBe(switched.revision);

    // A and B stop before the switch, still serving their last flags.
    for (const old of [a, b]) {
      const stopped = await inspect(old, switched.revision!);
      expect(stopped).toMatchObject({
        version: 1,
        status: "stalled",
        revision: switched.revision! - 1,
        stall: { code: "MODEL_UPGRADED", details: { needed: 2, version: 1 } },
      });
      expect(stopped.observed).toEqual(c2Following.observed);
      expect(stopped.observed["new-checkout for anna"]).toBe(true);
    }
    const late = await act(a, "setFlagState", { flag: "dark-mode", state: "DISABLED" });
    expect(late.code).toBe("MODEL_UPGRADED");

    // C writes version-2 commands now.
    const owned = await act(c2, "setOwner", { flag: "dark-mode", owner: "web-team" });
    expect(owned.revision).toBe(switched.revision! + 1);

    // 3. Restart A and B on version 2: they start from the switch entry, as C holds it.
    await Promise.all([a.stop(5_000), b.stop(5_000)]);
    const [a2, b2] = await Promise.all([
      service("service-a", "anna", 2),
      service("service-b", "dave", 2),
    ]);
    const handed = await act(b2, "setOwner", { flag: "log-level", owner: "platform" });
    expect(handed.revision).toBe(owned.revision! + 1);
    const final = await Promise.all([a2, b2, c2].map((s) => inspect(s, handed.revision!)));
    for (const replica of final) {
      expect(replica).toMatchObject({
        version: 2,
        status: "live",
        upgradePending: false,
        revision: handed.revision,
        hash: final[0]!.hash,
        observed: c2Following.observed, // owners changed, evaluations did not
      });
    }
    const state = final[0]!.observations.at(-1)!.state as FlagdConfig;
    expect(state.flags["dark-mode"]!.metadata).toMatchObject({ owner: "web-team" });
    expect(state.flags["log-level"]!.metadata).toMatchObject({ owner: "platform" });

    // No two replicas ever held different states at one revision; check that they overlapped.
    const holders = checkAgreement();
    expect(holders.get(half.revision!)).toEqual(
      new Set(["service-a v1", "service-b v1", "service-c v1", "service-c v2"]),
    );
    expect(holders.get(full.revision!)).toEqual(
      new Set(["service-a v1", "service-b v1", "service-c v2"]),
    );
    expect(holders.get(switched.revision!)).toEqual(new Set(["service-c v2"]));
    expect(holders.get(handed.revision!)?.size).toBe(3);
    expect(failures).toEqual([]);
  });

  it('upgrade: "on-open" (default): the first v2 service switches when it starts', async () => {
    inspections.length = 0;
    const a = await service("service-a", "anna", 1);
    const loaded = await act(a, "replaceDocument", { document: DOCUMENT });
    const c2 = await service("service-c", "carol", 2, "on-open");
    const c2Open = await inspect(c2, loaded.revision! + 1);
    expect(c2Open).toMatchObject({ upgradePending: false, revision: loaded.revision! + 1 });
    const stopped = await inspect(a, loaded.revision! + 1);
    expect(stopped).toMatchObject({ status: "stalled", stall: { code: "MODEL_UPGRADED" } });
    expect(stopped.observed).toEqual(c2Open.observed);
    // A version-1 service started now refuses to start, saying why.
    await expect(service("service-b", "dave", 1)).rejects.toThrow(/MODEL_UPGRADED/);
    expect(failures.map((f) => f.message)).toEqual([expect.stringMatching(/^service-b: MODEL/)]);
    failures.length = 0;
    checkAgreement();
  });
});
