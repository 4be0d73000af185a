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
import { openOptionsSchema } from "../src/open-synchronizer.js";
import { counter } from "./support/models.js";
import { openingError, openOptionKeys, wrongValueProblems } from "./support/option-refusals.js";

// zod's own word for a failed union or an unlabelled z.custom: it names neither what the
// option accepts nor what to write (a new user's `snapshots: true`, `onError: "log"`).
const bare = /Invalid input(?!:)/;

let port: number;
beforeAll(async () => {
  port = await getFreePort(); // nothing listens: an opening that passes validation is offline
});

/** Right options of an opening that, nothing listening, is offline. */
function opening() {
  return {
    servers: `nats://127.0.0.1:${port}`,
    stream: "OPTS",
    model: counter,
    snapshots: false as const,
    waitFor: "restored" as const,
  };
}

async function refusal(options: Record<string, unknown>): Promise<unknown> {
  return openingError(() => openSynchronizer(options as never));
}

describe("every wrong option value is refused in words that say what to write", () => {
  it.each(openOptionKeys(openOptionsSchema.shape))("openSynchronizer option %s", async (key) => {
    const base = opening();
    const problems = await wrongValueProblems(key, base, refusal);
    expect(problems).toEqual([]);
  });

  it("names the option's path as written, and keeps zod's issues as the cause", async () => {
    const base = opening();
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
    const sync = await openSynchronizer(opening());
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
