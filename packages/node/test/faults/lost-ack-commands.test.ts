import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { decodeEntry, defineModel, type Entry } from "@statesync/core";
import {
  openSynchronizer,
  startNatsServer,
  type NatsServer,
  type SynchronizerOf,
} from "@statesync/node";
import { tcp, uniqueStream } from "../helpers.js";
import { TcpProxy } from "../support/tcp-proxy.js";

/**
 * Unconditional commands in flight together share entries (format 4, docs/format.md). A lost
 * acknowledgement of such an entry is re-sent whole, with its message id: every command of it
 * lands exactly once and every caller resolves committed. On a real nats-server, through a
 * proxy that cuts the connection after the publish of a `commands` entry.
 */
const tally = defineModel({
  name: "tally",
  state: z.object({ n: z.number(), ids: z.array(z.number()) }),
  initial: { n: 0, ids: [] as number[] },
  commands: {
    add: {
      args: z.object({ id: z.number().int() }),
      apply(d, { id }) {
        d.n += 1;
        d.ids.push(id);
      },
    },
  },
});

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

/**
 * Runs `body` with a writer connected through a proxy (which can cut its connection) and a
 * reader connected directly, both replicas of a new stream; closes them and the proxy after.
 */
async function behindProxy(
  prefix: string,
  body: (p: {
    stream: string;
    proxy: TcpProxy;
    writer: SynchronizerOf<typeof tally>;
    reader: SynchronizerOf<typeof tally>;
  }) => Promise<void>,
): Promise<void> {
  const stream = uniqueStream(prefix);
  const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
  const open = (servers: string) =>
    openSynchronizer({ servers, stream, model: tally, snapshots: false, compaction: false });
  const writer = await open(proxy.url);
  const reader = await open(server.url);
  try {
    await body({ stream, proxy, writer, reader });
  } finally {
    await Promise.all([writer.close(), reader.close()]);
    await proxy.stop();
  }
}

describe("commands sent together, their acknowledgement lost", () => {
  it("are re-sent as one entry: each command stored once, every caller committed", () =>
    behindProxy("GRP", async ({ stream, proxy, writer, reader }) => {
      // The first 4 go alone; the 6th publish on the subject carries a group.
      let publishes = 0;
      const cut = proxy.cutAfterPublish((s) => s === `${stream}.log` && ++publishes === 6);
      const calls = Array.from({ length: 300 }, (_, id) =>
        writer.updateUnconditionally("add", { id }),
      );
      await cut;
      const outcomes = await Promise.allSettled(calls);
      expect(outcomes.filter((o) => o.status === "rejected")).toEqual([]);
      expect(proxy.cuts).toBe(1);
      expect(writer.stats.resends).toBeGreaterThanOrEqual(1);
      await reader.waitFor(writer.revision);
      for (const r of [writer, reader]) {
        expect(r.state.n).toBe(300);
        expect([...r.state.ids].sort((a, b) => a - b)).toEqual(
          Array.from({ length: 300 }, (_, i) => i),
        );
      }
      // Stored as commands entries, each command once.
      const entries: Entry[] = [];
      const nc = await tcp(server.url);
      try {
        const jsm = await nc.jetstreamManager();
        for (let seq = 1; seq <= writer.revision; seq++) {
          const d = decodeEntry((await jsm.streams.getMessage(stream, { seq })).data);
          if (d.ok) entries.push(d.entry);
        }
      } finally {
        await nc.close();
      }
      const grouped = entries.filter((e) => e.kind === "commands");
      expect(grouped.length).toBeGreaterThan(0);
      const carried = entries.flatMap((e) =>
        e.kind === "command"
          ? [e.args]
          : e.kind === "commands"
            ? e.commands.map((c) => c.args)
            : [],
      );
      expect(carried).toHaveLength(300);
    }));

  it("one call's outcomeTimeoutMs ending meanwhile fails that call only: the re-send goes on for the others", () =>
    behindProxy("GRL", async ({ stream, proxy, writer, reader }) => {
      // 4 publishes alone, the 5th carries the group; the connection is refused for 1.5 s.
      let publishes = 0;
      const cut = proxy.cutAfterPublish((s) => s === `${stream}.log` && ++publishes === 5, {
        refuseForMs: 1_500,
      });
      const add = (id: number, outcomeTimeoutMs?: number) =>
        writer.updateUnconditionally("add", { id }, { outcomeTimeoutMs });
      const calls = [
        ...Array.from({ length: 4 }, (_, id) => add(id)),
        add(4, 500), // ends while its group's outcome is unknown
        ...Array.from({ length: 10 }, (_, i) => add(5 + i)),
      ];
      await cut;
      const outcomes = await Promise.allSettled(calls);
      const codes = outcomes.map((o) =>
        o.status === "fulfilled" ? "ok" : (o.reason as { code: string }).code,
      );
      // Before: the 10 others, with 30 s limits, failed UNKNOWN_OUTCOME with the short one.
      expect(codes).toEqual([...Array(4).fill("ok"), "UNKNOWN_OUTCOME", ...Array(10).fill("ok")]);
      await reader.waitFor(writer.revision);
      for (const r of [writer, reader]) {
        expect([...r.state.ids].sort((a, b) => a - b)).toEqual(
          Array.from({ length: 15 }, (_, i) => i),
        );
      }
    }));
});
