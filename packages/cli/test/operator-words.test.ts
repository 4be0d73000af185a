import { describe, expect, it } from "vitest";
import { TcpProxy } from "../../node/test/support/tcp-proxy.js";
import {
  MODEL,
  openCounter,
  runCli,
  runJson,
  target,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

/**
 * What the CLI says of a `--key` its stream has no use for, of a range that holds no entry by
 * construction, and of a server that went away mid-command (trials on the operators' CLI).
 */
describe("statesync's words for layouts, ranges and servers gone", () => {
  const ctx = useNatsServer();

  /** An own-layout stream: genesis, increment by 2 (revision 2). */
  async function own(): Promise<string> {
    const stream = uniqueStream("WORDS");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 });
    await a.close();
    return stream;
  }

  it("info --key on a stream of one state reports its own layout, and every command says why it refuses", async () => {
    const stream = await own();
    const info = await runJson(["info", ...target(ctx.server.url, stream, "--key", "k1")]);
    // Before: layout "shared", subject <stream>.k1.
    expect(info).toMatchObject({
      layout: "own",
      subject: `${stream}.log`,
      configSafe: false,
      revision: 2,
      entries: 2,
    });
    expect(info.configProblems[0]).toMatch(/holds one state \(own layout.*--key k1 does not apply/);
    const text = await runCli(["info", ...target(ctx.server.url, stream, "--key", "k1")]);
    expect(text.stdout).toContain(`(own layout, subject ${stream}.log)`);
    for (const cmd of [["history"], ["state", "--model", MODEL], ["compact", "--model", MODEL]]) {
      const r = await runCli([...cmd, ...target(ctx.server.url, stream, "--key", "k1")]);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        `statesync: STREAM_CONFIG: stream ${stream} holds one state (own layout, subject ${stream}.log), not one state per key: --key k1 does not apply; run the command without --key`,
      );
    }
  });

  it("history --to 0 and --from 0, and tail --from 0, are usage errors (revision 0 holds no entry)", async () => {
    const stream = await own();
    for (const args of [
      ["history", "--to", "0"],
      ["history", "--from", "0"],
      ["tail", "--from", "0"],
    ]) {
      const r = await runCli(
        [...args, ...target(ctx.server.url, stream)],
        {},
        { killAfterMs: 20_000 },
      );
      // Before: exit 0 ("no retained entries in that range", or the whole log).
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(
        new RegExp(`^statesync: VALIDATION: ${args[1]} .*must be 1 or more`),
      );
    }
    expect(
      (await runJson(["history", ...target(ctx.server.url, stream, "--to", "1")])).length,
    ).toBe(1);
  });

  it("a server gone during compact reads UNAVAILABLE, as everywhere else in the CLI", async () => {
    const stream = await own();
    const url = new URL(ctx.server.url);
    const proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
    try {
      // The connection is cut while the compaction's replica reads the log, and not made again.
      void proxy.cutAfterPublish("$JS.API.CONSUMER", { refuseForMs: 20_000 });
      const r = await runCli(["compact", ...target(proxy.url, stream, "--model", MODEL)]);
      // Before: "CONNECTION_CLOSED: … open a new replica on a new connection".
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^statesync: UNAVAILABLE: /);
      expect(r.stderr).not.toMatch(/open a new replica/);
      expect(r.stderr).toMatch(/check the server, then run the command again/);
    } finally {
      proxy.stop();
    }
  });
});
