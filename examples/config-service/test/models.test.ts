import {
  createSynchronizer,
  MemoryLog,
  type CommandMap,
  type Model,
  type StateSyncError,
} from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { FlagCommandError, flagsModel } from "../src/flags-model.js";
import { liveMembers, membershipModel } from "../src/membership-model.js";

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((sync) => sync.close()));
});

async function replicas<S, C extends CommandMap<S>>(model: Model<S, C>, ...clientIds: string[]) {
  const log = new MemoryLog();
  const syncs = [];
  for (const clientId of clientIds) {
    const sync = await createSynchronizer({ log: log.handle(), model, clientId });
    open.push(sync);
    syncs.push(sync);
  }
  return syncs;
}

describe("feature-flags commands", () => {
  it("changes the default variant, and rejects one that is not a variant without writing", async () => {
    const [admin] = await replicas(flagsModel, "admin");
    await admin!.update("setDefaultVariant", { flag: "checkout-button-color", variant: "green" });
    const revision = admin!.revision;
    await expect(
      admin!.update("setDefaultVariant", { flag: "checkout-button-color", variant: "pink" }),
    ).rejects.toThrow(FlagCommandError);
    await expect(admin!.update("setFlagState", { flag: "nope", state: "ENABLED" })).rejects.toThrow(
      /unknown flag/,
    );
    expect(admin!.revision).toBe(revision);
    expect(admin!.state.flags["checkout-button-color"]).toMatchObject({
      defaultVariant: "green",
      metadata: { changedBy: "admin" },
    });
  });

  it("rolls out by replacing the buckets of the fractional rule, keeping other rules", async () => {
    const [admin] = await replicas(flagsModel, "admin");
    await admin!.update("rollOut", { flag: "new-checkout", variant: "on", percent: 10 });
    await admin!.update("rollOut", { flag: "new-checkout", variant: "on", percent: 50 });
    expect(admin!.state.flags["new-checkout"]!.targeting).toEqual({
      if: [
        { ends_with: [{ var: "email" }, "@acme.dev"] },
        "on",
        {
          fractional: [
            ["on", 50],
            ["off", 50],
          ],
        },
      ],
    });
    await admin!.update("rollOut", { flag: "recommendations-widget", variant: "on", percent: 60 });
    expect(admin!.state.flags["recommendations-widget"]!.targeting).toEqual({
      fractional: [{ var: "email" }, ["on", 60], ["off", 40]],
    });
    await admin!.update("rollOut", { flag: "maintenance-mode", variant: "on", percent: 5 });
    expect(admin!.state.flags["maintenance-mode"]!.targeting).toEqual({
      fractional: [
        ["on", 5],
        ["off", 95],
      ],
    });
    await expect(
      admin!.update("rollOut", { flag: "search-algorithm", variant: "vector", percent: 5 }),
    ).rejects.toThrow(/without a fractional rule/);
    await expect(
      admin!.update("rollOut", { flag: "new-checkout", variant: "on", percent: 101 }),
    ).rejects.toMatchObject({ code: "VALIDATION" });
  });

  it("adds variants of the flag's kind and removes only unused ones", async () => {
    const [admin] = await replicas(flagsModel, "admin");
    const flag = "checkout-button-color";
    await admin!.update("addVariant", { flag, variant: "purple", value: "#6a1b9a" });
    await expect(admin!.update("addVariant", { flag, variant: "big", value: 3 })).rejects.toThrow(
      /string values/,
    );
    await expect(admin!.update("removeVariant", { flag, variant: "blue" })).rejects.toThrow(
      /in use/,
    );
    await expect(admin!.update("removeVariant", { flag, variant: "red" })).rejects.toThrow(
      /in use/,
    );
    await admin!.update("removeVariant", { flag, variant: "purple" });
    const variants: object = admin!.state.flags[flag]!.variants;
    expect(Object.keys(variants).sort()).toEqual(["blue", "green", "red"]);
  });

  it("keeps both of two concurrent changes: the later one is retried on the newer state", async () => {
    const [a, b] = await replicas(flagsModel, "admin-a", "admin-b");
    const [first, second] = await Promise.all([
      a!.update("setFlagState", { flag: "dark-mode", state: "ENABLED" }),
      b!.update("setDefaultVariant", { flag: "log-level", variant: "warn" }),
    ]);
    expect(first.attempts + second.attempts).toBeGreaterThan(2);
    await a!.waitFor(Math.max(first.revision, second.revision));
    await b!.waitFor(a!.revision);
    for (const sync of [a!, b!]) {
      expect(sync.state.flags["dark-mode"]!.state).toBe("ENABLED");
      expect(sync.state.flags["log-level"]!.defaultVariant).toBe("warn");
    }
  });
});

describe("membership", () => {
  it("records joins and heartbeats from many writers without conflicts", async () => {
    const [one, two, reader] = await replicas(membershipModel, "one", "two", "reader");
    await Promise.all([
      one!.updateUnconditionally("join", { member: "one", role: "api", pid: 1 }),
      two!.updateUnconditionally("join", { member: "two", role: "api", pid: 2 }),
    ]);
    const writes = await Promise.all([
      one!.updateUnconditionally("heartbeat", { member: "one" }),
      two!.updateUnconditionally("heartbeat", { member: "two" }),
      two!.updateUnconditionally("heartbeat", { member: "two" }),
    ]);
    await reader!.waitFor(Math.max(...writes.map((w) => w.revision)));
    const { members } = reader!.state;
    expect(Object.keys(members).sort()).toEqual(["one", "two"]);
    expect(members.two!.heartbeats).toBe(2);
    expect(one!.stats.conflicts + two!.stats.conflicts).toBe(0);
    const now = members.one!.lastHeartbeat;
    expect(liveMembers(reader!.state, now, 1_000)).toEqual(["one", "two"]);
    expect(liveMembers(reader!.state, now + 60_000, 1_000)).toEqual([]);
  });

  it("makes a heartbeat of a non-member a no-op on every replica", async () => {
    const [writer, reader] = await replicas(membershipModel, "writer", "reader");
    // Stored, and a no-op everywhere: its caller learns it (details.committed: the entry is in).
    const failed = await writer!
      .updateUnconditionally("heartbeat", { member: "ghost" })
      .catch((e: StateSyncError) => e);
    expect(failed).toMatchObject({
      code: "COMMAND_FAILED",
      details: { reason: "threw", committed: true },
    });
    await reader!.waitFor((failed as StateSyncError).details.revision as number);
    expect(reader!.state.members).toEqual({});
    await writer!.updateUnconditionally("leave", { member: "ghost" });
  });
});
