import {
  createSynchronizer,
  MemoryLog,
  stateHash,
  type CommandMap,
  type Model,
  type StateSyncError,
} from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import type { FlagdConfig } from "../src/flagd-schema.js";
import { flagdProblem } from "../src/flagd-validate.js";
import { FlagCommandError, flagsModel } from "../src/flags-model.js";
import {
  flagsModelV2,
  ownedFlagsSchema,
  UNASSIGNED,
  upgradeFlagCommand,
  withOwners,
} from "../src/flags-model-v2.js";
import { initialFlags } from "../src/flags.js";
import { evaluateExpectations } from "../src/script.js";

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((sync) => sync.close()));
});

async function replica<S, C extends CommandMap<S>>(
  log: MemoryLog,
  model: Model<S, C>,
  options: { live?: boolean } = {},
) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model,
    compaction: false,
    onError: (error) => errors.push(error),
    ...options,
  });
  open.push(sync);
  return Object.assign(sync, { errors });
}

const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as FlagdConfig;
const ownerOf = (state: FlagdConfig, flag: string) => state.flags[flag]?.metadata?.["owner"];

/** The example's flags, with owners that are kept (valid) or replaced (empty, not a string). */
function documentWithOwners(): FlagdConfig {
  const document = plain(initialFlags);
  document.flags["new-checkout"]!.metadata = { owner: "checkout-team", changedBy: "admin" };
  document.flags["dark-mode"]!.metadata = { owner: "" };
  document.flags["log-level"]!.metadata = { owner: 7 };
  return document;
}

describe("feature-flags version 2: flags have owners", () => {
  it("migrate keeps valid owners, assigns the rest, changes nothing else, and is deterministic", () => {
    const document = documentWithOwners();
    const before = JSON.stringify(document);
    const migrated = withOwners(document);
    expect(JSON.stringify(document)).toBe(before); // the input is not changed
    expect(stateHash(withOwners(document))).toBe(stateHash(migrated));
    expect(migrated.flags["new-checkout"]!.metadata).toEqual({
      owner: "checkout-team",
      changedBy: "admin",
    });
    expect(ownerOf(migrated, "dark-mode")).toBe(UNASSIGNED);
    expect(ownerOf(migrated, "log-level")).toBe(UNASSIGNED);
    for (const key of Object.keys(document.flags)) {
      const { metadata: _, ...rest } = migrated.flags[key]!;
      const { metadata: __, ...original } = document.flags[key]!;
      expect(rest).toEqual(original);
    }
    expect(flagdProblem(JSON.stringify(migrated))).toBeUndefined();
    expect(ownedFlagsSchema.safeParse(migrated).success).toBe(true);
    expect(ownedFlagsSchema.safeParse(document).success).toBe(false);
    expect(evaluateExpectations(migrated)).toEqual(evaluateExpectations(document));
  });

  it("a v2 replica on a v1 log switches it and evaluates the flags as v1 did", async () => {
    const log = new MemoryLog();
    const v1 = await replica(log, flagsModel);
    await v1.update("replaceDocument", { document: documentWithOwners() });
    await v1.update("rollOut", { flag: "new-checkout", variant: "on", percent: 50 });
    const v2 = await replica(log, flagsModelV2);
    expect(v2.revision).toBe(v1.revision + 1); // the switch entry
    expect(plain(v2.state)).toEqual(withOwners(plain(v1.state)));
    expect(evaluateExpectations(plain(v2.state))).toEqual(evaluateExpectations(plain(v1.state)));
    expect((await v2.history()).map((h) => h.kind).at(-1)).toBe("switch");
  });

  it("setOwner hands a flag over; an unknown flag, an empty owner or a lost owner write nothing", async () => {
    const sync = await replica(new MemoryLog(), flagsModelV2);
    await sync.update("setOwner", { flag: "dark-mode", owner: "web-team" });
    const revision = sync.revision;
    expect(ownerOf(plain(sync.state), "dark-mode")).toBe("web-team");
    await expect(sync.update("setOwner", { flag: "nope", owner: "x" })).rejects.toThrow(
      FlagCommandError,
    );
    await expect(sync.update("setOwner", { flag: "dark-mode", owner: "" })).rejects.toMatchObject({
      code: "VALIDATION",
    });
    const lose = sync.update((draft) => {
      draft.flags["dark-mode"]!.metadata = {};
    });
    await expect(lose).rejects.toMatchObject({ code: "VALIDATION" });
    expect(sync.revision).toBe(revision);
  });

  it("replaceDocument keeps the owners of flags the document names none for", async () => {
    const sync = await replica(new MemoryLog(), flagsModelV2);
    await sync.update("setOwner", { flag: "dark-mode", owner: "web-team" });
    await sync.update("setOwner", { flag: "log-level", owner: "platform" });
    const document = plain(initialFlags);
    document.flags["log-level"]!.metadata = { owner: "sre" };
    document.flags["brand-new"] = { state: "ENABLED", variants: { a: 1 }, defaultVariant: "a" };
    await sync.update("replaceDocument", { document });
    const state = plain(sync.state);
    expect(ownerOf(state, "dark-mode")).toBe("web-team"); // kept
    expect(ownerOf(state, "log-level")).toBe("sre"); // the document's own
    expect(ownerOf(state, "brand-new")).toBe(UNASSIGNED);
    const rejected = {
      flags: { x: { state: "ENABLED", variants: { a: 1 }, defaultVariant: "b" } },
    };
    await expect(
      sync.update("replaceDocument", { document: rejected as never }),
    ).rejects.toMatchObject({ code: "VALIDATION" });
  });

  it("v1 commands that land after the switch are applied as v2 commands, keeping owners", async () => {
    const log = new MemoryLog();
    const first = await replica(log, flagsModel);
    const [late1, late2] = [
      await replica(log, flagsModel, { live: false }),
      await replica(log, flagsModel, { live: false }),
    ]; // neither sees the switch before it writes
    const v2 = await replica(log, flagsModelV2);
    await v2.update("setOwner", { flag: "dark-mode", owner: "web-team" });
    await late1.updateUnconditionally("replaceDocument", { document: plain(initialFlags) });
    await late2.updateUnconditionally("setFlagState", { flag: "dark-mode", state: "ENABLED" });
    const fresh = await replica(log, flagsModelV2);
    await v2.waitFor(fresh.revision);
    expect(plain(v2.state)).toEqual(plain(fresh.state));
    const state = plain(fresh.state);
    expect(state.flags["dark-mode"]).toMatchObject({
      state: "ENABLED",
      metadata: { owner: "web-team" },
    });
    expect(ownedFlagsSchema.safeParse(state).success).toBe(true);
    expect([...v2.errors, ...fresh.errors].map((e) => e.code)).not.toContain("OUTDATED_COMMAND");
    await expect(first.waitFor(fresh.revision)).rejects.toMatchObject({ code: "MODEL_UPGRADED" });
    expect(upgradeFlagCommand({ name: "rollOut", args: {} }, 1)).toEqual({
      name: "rollOut",
      args: {},
    });
    expect(upgradeFlagCommand({ name: "retired", args: {} }, 1)).toBeUndefined();
    expect(upgradeFlagCommand({ name: "rollOut", args: {} }, 2)).toBeUndefined();
  });
});
