import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startNatsServer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { openCounter, startTail, tcp, uniqueStream, useNatsServer } from "./helpers.js";

/** `statesync tail` follows the log live and ends cleanly on SIGTERM and SIGINT. */
describe("statesync tail", () => {
  const ctx = useNatsServer();

  it("prints each new entry as a JSON line as it is stored, and exits 0 on SIGTERM", async () => {
    const stream = uniqueStream("TAIL");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 }); // revision 2, before tail starts
    const tail = startTail(["--server", ctx.server.url, "--stream", stream, "--json"]);
    await tail.until(({ stderr }) => stderr.includes("from revision 3"));
    await a.update("increment", { by: 5 });
    await a.updateUnconditionally("note", { text: "live" });
    await tail.until(({ stdout }) => stdout.trim().split("\n").length >= 2);
    tail.child.kill("SIGTERM");
    const end = await tail.exited;
    expect(end).toEqual({ code: 0, signal: null });
    const rows = tail
      .out()
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows).toMatchObject([
      { revision: 3, kind: "update", commands: [{ name: "increment", args: { by: 5 } }] },
      { revision: 4, kind: "command", commands: [{ name: "note", args: { text: "live" } }] },
    ]);
    await a.close();
  });

  it("prints a table from --from and exits 0 on SIGINT (Ctrl-C)", async () => {
    const stream = uniqueStream("TAIL");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 });
    const tail = startTail(["--server", ctx.server.url, "--stream", stream, "--from", "1"]);
    await tail.until(({ stdout }) => stdout.includes("increment"));
    tail.child.kill("SIGINT");
    expect(await tail.exited).toEqual({ code: 0, signal: null });
    const lines = tail.out().stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^REVISION\s+TIME\s+KIND/);
    expect(lines[1]).toMatch(/^1\s+\S+\s+genesis\s/);
    expect(lines[2]).toMatch(/^2\s+\S+\s+update\s.*increment \{"by":1\}/);
    expect(tail.out().stderr).not.toContain("warning"); // nothing was removed
    await a.close();
  });

  // Regression test (fresh-eyes trial): `--from` a revision compaction had removed started
  // silently at the first retained entry, so a script resuming from a revision missed entries
  // unaware.
  it("says on stderr when --from is before the retained history, and starts at the first retained", async () => {
    const stream = uniqueStream("TAIL");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 }); // 2
    await a.update("increment", { by: 2 }); // 3
    const { revision } = await a.compact(); // 4, the log now starts there
    await a.close();
    const tail = startTail([
      "--server",
      ctx.server.url,
      "--stream",
      stream,
      "--from",
      "2",
      "--json",
    ]);
    await tail.until(({ stdout }) => stdout.includes("\n"));
    tail.child.kill("SIGTERM");
    expect(await tail.exited).toEqual({ code: 0, signal: null });
    const { stdout, stderr } = tail.out();
    expect(stderr.split("\n").slice(0, 2)).toEqual([
      `statesync: warning: TRUNCATED: --from 2 is before the retained history (the first retained revision is ${revision}): revisions before it were compacted or truncated away`,
      `following ${stream}.log in stream ${stream} from revision ${revision} (Ctrl-C to stop)`,
    ]);
    // stdout stays one JSON object per line, from the first retained entry.
    expect(JSON.parse(stdout.split("\n")[0]!)).toMatchObject({ revision, kind: "snapshot" });
  });

  // Regression test (fresh-eyes trial): while the server was down, tail printed nothing, so a
  // person watching it could not tell a quiet log from a lost server.
  it("says on stderr when the connection is lost and when it is back, then prints what was stored", async () => {
    const server = await startNatsServer();
    try {
      const stream = uniqueStream("TAIL");
      const a = await openCounter(server.url, stream);
      await a.update("increment", { by: 1 }); // 2
      await a.close();
      const tail = startTail(["--server", server.url, "--stream", stream, "--json"]);
      await tail.until(({ stderr }) => stderr.includes("from revision 3"));
      expect(tail.out().stderr).not.toContain("connection to the server lost");
      await server.kill("SIGKILL");
      await tail.until(({ stderr }) => stderr.includes("connection to the server lost"));
      await server.restart();
      await tail.until(({ stderr }) => stderr.includes("reconnected"));
      const b = await openCounter(server.url, stream);
      await b.update("increment", { by: 7 }); // 3
      await b.close();
      await tail.until(({ stdout }) => stdout.includes("\n"));
      tail.child.kill("SIGTERM");
      expect(await tail.exited).toEqual({ code: 0, signal: null });
      const { stdout, stderr } = tail.out();
      expect(stderr.trim().split("\n")).toEqual([
        `following ${stream}.log in stream ${stream} from revision 3 (Ctrl-C to stop)`,
        "connection to the server lost: reconnecting (Ctrl-C to stop)",
        "reconnected: following again",
      ]);
      expect(JSON.parse(stdout.trim())).toMatchObject({
        revision: 3,
        kind: "update",
        commands: [{ name: "increment", args: { by: 7 } }],
      });
    } finally {
      await server.stop();
    }
  });

  // Found by a fresh-eyes trial (stop 25): after the server came back on an older copy of its
  // store, tail resumed after the last revision it had printed and printed the other history's
  // next entry, splicing two histories without a word, and went on.
  it("ends with LOG_REPLACED when the log went back under it, printing nothing of the other history", async () => {
    const server = await startNatsServer();
    const backup = await mkdtemp(path.join(tmpdir(), "tail-rewound-"));
    const withStore = async (action: (store: string) => Promise<void>) => {
      await server.stop({ keepStore: true });
      await action(server.storeDir);
      await server.restart();
    };
    try {
      const stream = uniqueStream("TAIL");
      const a = await openCounter(server.url, stream);
      await a.update("increment", { by: 1 }); // 2
      await a.close();
      await withStore((store) => cp(store, backup, { recursive: true })); // the log at 2
      const tail = startTail(["--server", server.url, "--stream", stream, "--json"]);
      await tail.until(({ stderr }) => stderr.includes("from revision 3"));
      const b = await openCounter(server.url, stream);
      for (let i = 0; i < 3; i++) await b.update("increment", { by: 1 }); // 3, 4, 5
      await b.close();
      await tail.until(({ stdout }) => stdout.trim().split("\n").length === 3);
      await withStore(async (store) => {
        await rm(store, { recursive: true, force: true });
        await cp(backup, store, { recursive: true });
      });
      const c = await openCounter(server.url, stream); // another history from 2 on
      for (let i = 0; i < 5; i++) await c.update("increment", { by: 100 }); // 3 to 7
      await c.close();
      expect(await tail.exited).toEqual({ code: 1, signal: null });
      const { stdout, stderr } = tail.out();
      const rows = stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(rows.map((r) => [r.revision, r.commands[0].args.by])).toEqual([
        [3, 1],
        [4, 1],
        [5, 1],
      ]);
      expect(stderr).toMatch(/statesync: LOG_REPLACED: the log went back while tail followed it/);
      // Not "following again" first (a trial saw it just before LOG_REPLACED).
      expect(stderr).not.toContain("reconnected: following again");
      // Its own advice only (a trial saw the deleted stream's appended to it).
      expect(stderr.trim().split("\n").at(-1)).toMatch(/another history: run tail again$/);
    } finally {
      await server.stop();
      await rm(backup, { recursive: true, force: true });
    }
  });

  // Found by a fresh-eyes trial (stop 25): a tail held up while entries were written and
  // compacted away resumed at the snapshot entry and skipped them without a word.
  it("says on stderr which revisions were removed before it read them", async () => {
    const stream = uniqueStream("TAIL");
    const a = await openCounter(ctx.server.url, stream);
    const tail = startTail(["--server", ctx.server.url, "--stream", stream, "--json"]);
    await tail.until(({ stderr }) => stderr.includes("following"));
    tail.child.kill("SIGSTOP"); // held up: the server stops pushing once flow control stalls
    try {
      const text = "y".repeat(1_000);
      for (let i = 0; i < 600; i++) await a.updateUnconditionally("note", { text });
      await a.compact();
    } finally {
      tail.child.kill("SIGCONT");
    }
    const removed =
      /revisions (\d+)-(\d+) were removed from the log \(a compaction or a purge\) before tail read them: not printed/;
    await tail.until(({ stderr }) => removed.test(stderr));
    const latest = a.revision;
    await tail.until(({ stdout }) => stdout.includes(`"revision":${latest},`));
    tail.child.kill("SIGTERM");
    expect((await tail.exited).code).toBe(0);
    const [, from, to] = removed.exec(tail.out().stderr)!.map(Number);
    const printed = tail
      .out()
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l).revision);
    // Every revision after the start is either printed or said to be removed, in order.
    const skipped = Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
    const all = [...printed, ...skipped].sort((x, y) => x - y);
    expect(all).toEqual(Array.from({ length: latest - 1 }, (_, i) => i + 2));
    await a.close();
  });

  // Found by a fresh-eyes trial (stop 25): Ctrl-C while connecting to a server that never
  // answers waited out the connection timeout, then exited 1 with UNAVAILABLE.
  it("stops at once with exit 0 on Ctrl-C while still connecting", async () => {
    const { createServer } = await import("node:net");
    let reached: () => void = () => undefined;
    const connected = new Promise<void>((r) => (reached = r));
    const silent = createServer((socket) => {
      socket.on("error", () => undefined);
      reached(); // tail is connecting: its signal handlers are in place
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const port = (silent.address() as { port: number }).port;
      const tail = startTail(["--server", `nats://127.0.0.1:${port}`, "--stream", "X"]);
      await connected;
      tail.child.kill("SIGINT");
      expect(await tail.exited).toEqual({ code: 0, signal: null });
      expect(tail.out().stderr).not.toContain("UNAVAILABLE");
    } finally {
      silent.close();
    }
  });

  it("ends with exit 1 and one line when the stream is deleted under it", async () => {
    const stream = uniqueStream("TAIL");
    const a = await openCounter(ctx.server.url, stream);
    await a.close();
    const tail = startTail(["--server", ctx.server.url, "--stream", stream]);
    await tail.until(({ stderr }) => stderr.includes("following"));
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.delete(stream);
    await nc.close();
    expect((await tail.exited).code).toBe(1);
    // Whichever of the log's checks sees it first, it is LOG_REPLACED (issue 10, case 3), said
    // as what an operator does (a fresh-eyes trial found the library's advice to a program:
    // "open a new replica to use a new one").
    const { stderr } = tail.out();
    expect(stderr).toMatch(
      new RegExp(
        `^statesync: LOG_REPLACED: .*stream ${stream} was deleted: the stream this command was using is gone; run the command again once the stream exists$`,
        "m",
      ),
    );
    expect(stderr).not.toMatch(/replica/);
  });

  it("says on stderr when --from is past the latest revision, then prints from there", async () => {
    const stream = uniqueStream("TAIL");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 }); // 2
    const tail = startTail([
      "--server",
      ctx.server.url,
      "--stream",
      stream,
      "--from",
      "4",
      "--json",
    ]);
    await tail.until(({ stderr }) => stderr.includes("(Ctrl-C to stop)"));
    await a.update("increment", { by: 3 }); // 3: not printed
    await a.update("increment", { by: 4 }); // 4
    await tail.until(({ stdout }) => stdout.includes("\n"));
    tail.child.kill("SIGTERM");
    expect(await tail.exited).toEqual({ code: 0, signal: null });
    const { stdout, stderr } = tail.out();
    expect(stderr.split("\n")[0]).toBe(
      "statesync: warning: --from 4 is past the latest revision (2): nothing is printed until the log reaches it",
    );
    expect(
      stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).revision),
    ).toEqual([4]);
    await a.close();
  });

  it("refuses a bad --from with exit 1 before connecting", async () => {
    const stream = uniqueStream("TAIL");
    const bad = startTail(["--server", ctx.server.url, "--stream", stream, "--from=-1"]);
    expect((await bad.exited).code).toBe(1);
    expect(bad.out().stderr).toBe("statesync: VALIDATION: --from must be a non-negative integer\n");
  });
});
