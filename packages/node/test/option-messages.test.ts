import {
  createSynchronizer,
  getFreePort,
  JetStreamLog,
  MemoryLog,
  openJetStreamSynchronizer,
  openSynchronizer,
  StateSyncError,
  startNatsServer,
} from "@statesync/node";
import { beforeAll, describe, expect, it } from "vitest";
import { optionsSchema as coreOptionsSchema } from "../../core/src/engine/options.js";
import { jetStreamLogOptionsSchema } from "../../core/src/jetstream/jetstream-log-options.js";
import { openOptionsSchema } from "../src/open-synchronizer.js";
import { counter } from "./support/models.js";
import { refusalProblem, shown, wrongValues } from "./support/option-refusals.js";

// zod's own word for a failed union or an unlabelled z.custom: it names neither what the
// option accepts nor what to write (a new user's `snapshots: true`, `onError: "log"`).
const bare = /Invalid input(?!:)/;

/** Options of createSynchronizer / JetStreamLog that openSynchronizer makes itself. */
const internal = new Set(["log", "ownsLog", "onClose", "connectionErrors", "whyNotConnected"]);

let port: number;
beforeAll(async () => {
  port = await getFreePort(); // nothing listens: an opening that passes validation is offline
});

async function refusal(options: Record<string, unknown>): Promise<unknown> {
  try {
    const sync = await openSynchronizer(options as never);
    await sync.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("every wrong option value is refused in words that say what to write", () => {
  const keys = [
    ...new Set([
      ...Object.keys(openOptionsSchema.shape),
      ...Object.keys(coreOptionsSchema.shape),
      ...Object.keys(jetStreamLogOptionsSchema.shape),
    ]),
  ].filter((k) => !internal.has(k));

  it.each(keys)("openSynchronizer option %s", async (key) => {
    const problems: string[] = [];
    for (const value of wrongValues) {
      const options: Record<string, unknown> = {
        servers: `nats://127.0.0.1:${port}`,
        stream: "OPTS",
        model: counter,
        snapshots: false,
        waitFor: "restored",
        [key]: value,
      };
      if (key === "connection") delete options.servers;
      const error = await refusal(options);
      if (error === undefined) continue; // a value of the right type
      // Whichever layer checks the option (openSynchronizer, createSynchronizer, JetStreamLog),
      // the message names the function called and the option as written (before, a trial:
      // "invalid synchronizer options", "invalid JetStreamLog options").
      const problem = refusalProblem(error, "openSynchronizer", key);
      if (problem !== undefined) problems.push(`${shown(value)}: ${problem}`);
    }
    expect(problems).toEqual([]);
  });

  it("names the option's path as written, and keeps zod's issues as the cause", async () => {
    const base = {
      servers: `nats://127.0.0.1:${port}`,
      stream: "OPTS",
      model: counter,
      snapshots: false,
      waitFor: "restored",
    };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ pending: { owner: 7 } }, "pending.owner"], // openSynchronizer's own (nested)
      [{ pending: { owner: "a", store: 7 } }, "pending.store"],
      [{ live: "yes" }, "live"], // createSynchronizer's
      [{ compaction: { everyEntries: 0 } }, "compaction.everyEntries"],
      [{ replicas: 9 }, "replicas"], // JetStreamLog's
      [{ fanout: { tailCheckMs: "x" } }, "fanout"],
    ];
    for (const [wrong, path] of cases) {
      const error = (await refusal({ ...base, ...wrong })) as StateSyncError;
      expect(error, path).toBeInstanceOf(StateSyncError);
      expect([error.code, error.message], path).toEqual([
        "VALIDATION",
        expect.stringMatching(new RegExp(`^invalid openSynchronizer options: [^]*→ at ${path}$`)),
      ]);
      const issues = (error.cause as { issues: Array<{ path: unknown[] }> }).issues;
      expect(
        issues.map((i) => i.path.join(".")),
        path,
      ).toEqual([path]);
    }
    const typo = (await refusal({ ...base, readOnly: true })) as StateSyncError;
    expect(typo.message).toBe('invalid openSynchronizer options: ✖ Unrecognized key: "readOnly"');
  });

  it("direct users of the layers below see those layers' names", async () => {
    const direct = async (open: () => unknown): Promise<string> => {
      try {
        await open();
        return "opened";
      } catch (error) {
        return `${(error as StateSyncError).code}: ${(error as Error).message}`;
      }
    };
    expect(
      await direct(() =>
        createSynchronizer({ log: new MemoryLog(), model: counter, live: "yes" } as never),
      ),
    ).toMatch(/^VALIDATION: invalid synchronizer options: [^]*→ at live$/);
    expect(
      await direct(() => new JetStreamLog({ connection: {}, stream: "S", replicas: 9 } as never)),
    ).toMatch(/^VALIDATION: invalid JetStreamLog options: [^]*→ at replicas$/);
    expect(
      await direct(() =>
        openJetStreamSynchronizer({
          connection: new Promise(() => undefined), // a connection still being made
          stream: "S",
          model: counter,
          live: "yes",
        } as never),
      ),
    ).toMatch(/^VALIDATION: invalid openJetStreamSynchronizer options: [^]*→ at live$/);
  });

  it("update options and startNatsServer options too", async () => {
    const sync = await openSynchronizer({
      servers: `nats://127.0.0.1:${port}`,
      stream: "OPTS",
      model: counter,
      snapshots: false,
      waitFor: "restored",
    });
    const messages: string[] = [];
    for (const bad of [{ signal: 7 }, { signal: "x" }]) {
      const error = await sync.update("increment", { by: 1 }, bad as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StateSyncError);
      messages.push((error as Error).message);
    }
    await sync.close();
    for (const bad of [{ jetstream: 7 }, { jetstream: true }, { extraConfig: 7 }]) {
      const error = await startNatsServer(bad as never).then(
        async (s) => {
          await s.stop();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StateSyncError);
      messages.push((error as Error).message);
    }
    expect(messages.filter((m) => bare.test(m))).toEqual([]);
  });
});
