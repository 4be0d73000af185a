import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TcpProxy } from "../../node/test/support/tcp-proxy.js";
import { MODEL, openCounter, runCli, target, uniqueStream, useNatsServer } from "./helpers.js";

/**
 * A server that stops answering in the middle of a read (a fresh-eyes trial froze it with
 * SIGSTOP): every command that reads the log either read all of it, up to the latest revision it
 * had when the command started, or fails (exit 1) saying how far it got. Before, `verify`,
 * `export` and `state` printed what a replica had read until then (`result ok, replayed
 * revisions 1 to 783` of 20,001), exit 0.
 */
describe("a server that stalls during a read", () => {
  const ctx = useNatsServer();
  const ENTRIES = 1_200;
  const stream = uniqueStream("STALL");
  let proxy: TcpProxy;

  beforeAll(async () => {
    const url = new URL(ctx.server.url);
    proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
    const writer = await openCounter(ctx.server.url, stream);
    const text = "x".repeat(2_000);
    // One at a time: an entry each (commands in flight together would share entries).
    for (let i = 1; i < ENTRIES; i++) await writer.updateUnconditionally("note", { text });
    await writer.close();
  }, 60_000);
  afterAll(() => proxy?.stop());

  /**
   * Runs `args` through the proxy, which freezes for 4 s once `after` bytes reached the CLI: at
   * these points a replica's catch-up was cut short (state at revision 0, 15, 271 of 1,200).
   */
  async function stalled(after: number, ...args: string[]) {
    let stalledOnce = false;
    const over = proxy.stallAfter(after, 4_000).then(() => {
      stalledOnce = true;
      return new Promise((resolve) => setTimeout(resolve, 4_000));
    });
    const run = await runCli(
      [...args, ...target(proxy.url, stream, "--timeout", "1500")],
      {},
      {
        killAfterMs: 60_000,
      },
    );
    expect(stalledOnce).toBe(true);
    await over; // the next run starts on a proxy that forwards again
    return run;
  }
  const STALL_POINTS = [5_000, 20_000, 600_000];

  /**
   * A run either read the whole log (`whole` of its `--json` output) or failed saying how far
   * it got: exit 1, nothing on stdout, one line.
   */
  function expectWholeOrFailed(
    r: { code: number | null; stdout: string; stderr: string },
    whole: (out: any) => void,
  ) {
    if (r.code === 0) return whole(JSON.parse(r.stdout));
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toBe("");
    // How far the read got, when it got to reading entries (not when stream info timed out).
    expect(r.stderr).toMatch(/^statesync: UNAVAILABLE: [^\n]*\n$/);
    if (/read the log/.test(r.stderr)) expect(r.stderr).toMatch(/up to revision \d+ of 1200 only/);
  }

  it("verify, state and export report the whole log or fail", async () => {
    for (const after of STALL_POINTS) {
      const state = await stalled(after, "state", "--json", "--model", MODEL);
      expectWholeOrFailed(state, (out) => expect(out.revision).toBe(ENTRIES));

      const verify = await stalled(after, "verify", "--json", "--model", MODEL);
      expectWholeOrFailed(verify, (out) =>
        expect(out).toMatchObject({ ok: true, revision: ENTRIES }),
      );

      const file = path.join(ctx.dir, `stalled-${after}.json`);
      const exported = await stalled(after, "export", "--json", "--model", MODEL, file);
      expectWholeOrFailed(exported, (out) => expect(out.revision).toBe(ENTRIES));
      if (exported.code !== 0)
        await expect(readFile(file)).rejects.toMatchObject({ code: "ENOENT" });
    }
  }, 300_000);

  it("history and info list every entry or fail", async () => {
    for (const after of STALL_POINTS) {
      const history = await stalled(after, "history", "--json");
      expectWholeOrFailed(history, (out) => expect(out).toHaveLength(ENTRIES));
      const info = await stalled(after, "info", "--json");
      expectWholeOrFailed(info, (out) => expect(out).toMatchObject({ entries: ENTRIES }));
    }
  }, 300_000);
});
