import { JetStreamLog } from "@statesync/node";
import { describe, expect, it } from "vitest";
import {
  counter,
  MODEL,
  openCounter,
  runCli,
  runJson,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
} from "./helpers.js";

const enc = (text: string) => new TextEncoder().encode(text);

/** `statesync info` and `statesync history` against a real nats-server, as a child process. */
describe("statesync info and history", () => {
  const ctx = useNatsServer();
  const where = (stream: string, ...more: string[]) => target(ctx.server.url, stream, ...more);

  /** A stream with genesis, a conditional update, a command and a malformed entry. */
  async function seeded(): Promise<string> {
    const stream = uniqueStream("INFO");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 }); // 2
    await a.updateUnconditionally("note", { text: "hello" }); // 3
    await a.close();
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    await log.appendUnconditional(new TextEncoder().encode("{not json"), "garbage-1"); // 4
    await log.close();
    await nc.close();
    return stream;
  }

  it("info reports model, revision, entries, bytes and a safe configuration", async () => {
    const stream = await seeded();
    const info = await runJson(["info", ...where(stream)]);
    expect(info).toMatchObject({
      stream,
      layout: "own",
      subject: `${stream}.log`,
      model: { name: "counter", version: 1, from: "genesis", revision: 1 },
      revision: 4,
      firstRevision: 1,
      entries: 4,
      malformed: 1,
      lastSnapshot: null,
      configSafe: true,
      configProblems: [],
      configWarnings: [],
    });
    expect(info.bytes).toBeGreaterThan(400);
    const text = await runCli(["info", ...where(stream)]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/model\s+counter v1 \(from the genesis entry at revision 1\)/);
    expect(text.stdout).toMatch(/entries\s+4 retained, 1 malformed/);
  });

  /** Appends entries (as JSON, unchecked) to the state's log, as another program would. */
  async function append(stream: string, key: string | undefined, ...entries: object[]) {
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream, key });
    for (const [i, entry] of entries.entries()) {
      await log.appendUnconditional(enc(JSON.stringify(entry)), `raw-${i}-${Math.random()}`);
    }
    await log.close();
    await nc.close();
  }
  const head = { v: 1, ts: 1, client: "raw" } as const;
  const update = (base: number) =>
    ({
      ...head,
      kind: "update",
      base,
      seed: 1,
      patches: [{ op: "replace", path: ["count"], value: 99 }],
    }) as const;
  const genesis = {
    ...head,
    kind: "genesis",
    model: "counter",
    version: 1,
    initialHash: counter.initialHash,
  } as const;

  // Regression test (fresh-eyes trial): `info` counted only the entries that do not decode as
  // malformed, while every replica (and `verify`) also skips a conditional update based on
  // another revision and a second genesis entry.
  it("info counts as malformed every entry a replica skips, as verify finds them", async () => {
    const stream = uniqueStream("CHAIN");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 2 }); // 2
    await a.close();
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream });
    await log.appendUnconditional(enc("{not json"), "garbage"); // 3
    await log.close();
    await nc.close();
    await append(stream, undefined, update(2), genesis); // 4: based on 2, not 3; 5
    const b = await openCounter(ctx.server.url, stream);
    await b.update("increment", { by: 1 }); // 6, based on 5
    await b.close();

    const info = await runJson(["info", ...where(stream)]);
    expect(info).toMatchObject({
      revision: 6,
      entries: 6,
      malformed: 3,
      firstMalformed: { revision: 3, code: "CORRUPT_ENTRY" },
      stop: null,
    });
    const verify = await runCli(["verify", ...where(stream, "--model", MODEL, "--json")]);
    const report = JSON.parse(verify.stdout);
    expect(report).toMatchObject({ ok: false, stoppedAt: null, divergences: 3 });
    expect(report.divergence).toMatchObject({ revision: 3, code: "CORRUPT_ENTRY" });
    // Every problem, not only the first (the CLI listed one, and a count).
    expect(report.problems).toHaveLength(3);
    expect(report.problems[0]).toEqual(report.divergence);
    expect(report.problems.map((p: { revision: number }) => p.revision)).toEqual([3, 4, 5]);
    const text = await runCli(["info", ...where(stream)]);
    expect(text.stdout).toMatch(/entries\s+6 retained, 3 malformed\n/);
    expect(text.stdout).toMatch(
      /malformed\s+skipped by every replica; the first at revision 3: CORRUPT_ENTRY: malformed entry: invalid JSON/,
    );
  });

  it("info says where every replica stops, as verify does, and counts nothing after it", async () => {
    // A shared stream: an update based on a later revision stops the replay (TRUNCATED: entries
    // were missed); one based on an earlier revision is skipped, as no honest append has it.
    const shared = uniqueStream("CHAINS");
    const a = await openCounter(ctx.server.url, shared, { key: "k" });
    await a.update("increment", { by: 2 }); // 2
    const s = await openCounter(ctx.server.url, shared, { key: "stale" });
    await s.update("increment", { by: 2 }); // 4 (3: its genesis)
    await Promise.all([a.close(), s.close()]);
    await append(shared, "stale", update(1)); // 5: based on 1, not 4: skipped
    const stale = await runJson(["info", ...where(shared, "--key", "stale")]);
    expect(stale).toMatchObject({ malformed: 1, stop: null });
    await append(shared, "k", update(9), { v: 1, kind: "bogus" }); // 6: based on 9, past 2; 7
    const info = await runJson(["info", ...where(shared, "--key", "k")]);
    expect(info).toMatchObject({ malformed: 0, stop: { revision: 6, code: "TRUNCATED" } });
    const verify = JSON.parse(
      (await runCli(["verify", ...where(shared, "--key", "k", "--model", MODEL, "--json")])).stdout,
    );
    expect(verify).toMatchObject({ stoppedAt: 6, divergence: { code: "TRUNCATED" } });
    // Both name the entry's base and both causes (before: "no longer holds the entries after 2").
    const why =
      /^the conditional entry at revision 6 is based on revision 9, past this key's last entry the replica read \(2\): .*or the entry was not written by a conditional append/;
    expect(info.stop.problem).toMatch(why);
    expect(verify.divergence.problem).toMatch(why);

    // A newer format stops every replica (UNSUPPORTED_FORMAT): not malformed.
    const own = uniqueStream("CHAINV");
    const b = await openCounter(ctx.server.url, own);
    await b.close();
    await append(own, undefined, { v: 99, kind: "update" }, { v: 1, kind: "bogus" }); // 2, 3
    const newer = await runJson(["info", ...where(own)]);
    expect(newer).toMatchObject({
      malformed: 0,
      stop: { revision: 2, code: "UNSUPPORTED_FORMAT" },
    });
    const verified = JSON.parse(
      (await runCli(["verify", ...where(own, "--model", MODEL, "--json")])).stdout,
    );
    expect(verified).toMatchObject({ stoppedAt: 2, divergence: { code: "UNSUPPORTED_FORMAT" } });
    const text = await runCli(["info", ...where(own)]);
    expect(text.stdout).toMatch(/replay stops\s+at revision 2: UNSUPPORTED_FORMAT: /);
  });

  it("info reports a configuration that can drop history instead of failing", async () => {
    const stream = uniqueStream("UNSAFE");
    const nc = await tcp(ctx.server.url);
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${stream}.log`], max_msgs: 10 });
    await nc.publish(`${stream}.log`, new TextEncoder().encode("{}"));
    await nc.flush();
    await nc.close();
    const info = await runJson(["info", ...where(stream)]);
    expect(info.configSafe).toBe(false);
    expect(info.configProblems).toEqual(["max_msgs 10 drops history"]);
    expect(info.configWarnings).toEqual([expect.stringMatching(/^deny_delete is off: /)]);
    expect(info).toMatchObject({ revision: 1, entries: 1, model: null });
    const text = await runCli(["info", ...where(stream)]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("UNSAFE (STREAM_CONFIG): max_msgs 10 drops history");
    // Its warnings too, not only in --json (a fresh-eyes trial found them left out).
    expect(text.stdout).toMatch(/^config warning\s+deny_delete is off: /m);
  });

  // A fresh-eyes trial: `info --stream S` on a shared stream printed the whole stream's counts for
  // subject S.log, which holds nothing, with no word of --key.
  it("info on a shared stream without --key says to pass one", async () => {
    const stream = uniqueStream("SHAREDNOKEY");
    for (const key of ["k1", "k2"]) {
      const a = await openCounter(ctx.server.url, stream, { key });
      await a.update("increment", { by: 1 });
      await a.close();
    }
    const info = await runJson(["info", ...where(stream)]);
    expect(info.warnings).toEqual([
      expect.stringContaining(`subjects (${stream}.>) are those of a shared stream`),
    ]);
    const text = await runCli(["info", ...where(stream)]);
    expect(text.stdout).toMatch(
      /^warning\s+.*read one with --key <key>; the revision, entries and bytes shown/m,
    );
    // Its configuration is checked as a shared stream's: it was "UNSAFE" beside that warning
    // (subjects not exactly S.log), of a healthy shared stream.
    expect(text.stdout).toMatch(/^configuration\s+safe \(no limit drops history\)$/m);
    expect(info).toMatchObject({ configSafe: true, configProblems: [] });
    // With a key, no such warning.
    expect((await runJson(["info", ...where(stream, "--key", "k1")])).warnings).toEqual([]);
    // The other commands refuse, saying to pass --key (a trial: they said the stream was
    // "unsafe for statesync", subjects not exactly S.log, of a healthy shared stream).
    for (const command of ["history", "state", "verify"]) {
      const r = await runCli([command, ...where(stream, "--model", MODEL)]);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        `statesync: STREAM_CONFIG: stream ${stream}: the stream's subjects (${stream}.>) are those of a shared stream, which holds one state per key: read one with --key <key>`,
      );
    }
    // A shared stream whose subjects do not start with its name: --subject-prefix named too.
    const other = uniqueStream("SHAREDPFX");
    const prefix = `pfx.${other}`;
    const b = await openCounter(ctx.server.url, other, { key: "k", subjectPrefix: prefix });
    await b.close();
    const pfx = await runJson(["info", ...where(other)]);
    expect(pfx.warnings).toEqual([
      expect.stringContaining(`(${prefix}.>) are those of a shared stream`),
    ]);
    expect(pfx.warnings[0]).toContain("and --subject-prefix");
  });

  it("info warns about a usable stream without deny_delete (one deleted message breaks it)", async () => {
    const stream = uniqueStream("NODENY");
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.add({ name: stream, subjects: [`${stream}.log`] });
    await nc.close();
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 });
    await a.close();
    const info = await runJson(["info", ...where(stream)]);
    expect(info).toMatchObject({ configSafe: true, configProblems: [], revision: 2 });
    expect(info.configWarnings).toEqual([expect.stringMatching(/^deny_delete is off: /)]);
    const text = await runCli(["info", ...where(stream)]);
    expect(text.stdout).toMatch(
      /configuration\s+usable, with a warning \(STREAM_CONFIG\): deny_delete is off/,
    );
    // verify counts no divergence for it (the log's warning reaches its replica's error events).
    expect(await runJson(["verify", ...where(stream, "--model", MODEL)])).toMatchObject({
      ok: true,
      divergences: 0,
    });
  });

  // Found by a fresh-eyes trial (stop 25): a message published on another subject of a state's
  // own stream (a subject added, then removed) stopped every replica with a bare "no longer
  // holds the entries", and info called the stream safe.
  it("info warns about messages on another subject of a state's own stream; replicas say why they stop", async () => {
    const stream = uniqueStream("FOREIGN");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 }); // 2
    const nc = await tcp(ctx.server.url);
    const jsm = await nc.jetstreamManager();
    const { config } = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...config, subjects: [...config.subjects, `${stream}.x`] });
    await nc.jetstream().publish(`${stream}.x`, enc("not this state's")); // 3
    await jsm.streams.update(stream, config);
    await nc.close();
    const info = await runJson(["info", ...where(stream)]);
    expect(info.configWarnings).toEqual([
      `the stream holds messages on 2 subjects, not only ${stream}.log: replicas read that subject only, and stop (TRUNCATED) at a message on another one unless a snapshot entry follows it`,
    ]);
    await expect(a.update("increment", { by: 1 })).rejects.toThrow(
      "the log no longer holds the entries after revision 2 (latest: 3): deleted, or a message on another subject of the state's own stream",
    );
    await a.close();
  });

  it("info on the shared layout reads only the key's subject", async () => {
    const stream = uniqueStream("SHARED");
    const a = await openCounter(ctx.server.url, stream, { key: "tenant-a.counter" });
    const b = await openCounter(ctx.server.url, stream, { key: "tenant-b.counter" });
    await a.update("increment", { by: 1 });
    await b.update("increment", { by: 5 });
    await b.update("increment", { by: 5 });
    await Promise.all([a.close(), b.close()]);
    const info = await runJson(["info", ...where(stream, "--key", "tenant-b.counter")]);
    expect(info).toMatchObject({
      layout: "shared",
      subject: `${stream}.tenant-b.counter`,
      entries: 3,
      model: { name: "counter" },
    });
  });

  it("--subject-prefix reaches a state written with subjectPrefix, in either layout", async () => {
    const own = uniqueStream("PREFIXED");
    const shared = uniqueStream("PREFIXEDS");
    const a = await openCounter(ctx.server.url, own, { subjectPrefix: "acme.own" });
    const b = await openCounter(ctx.server.url, shared, { subjectPrefix: "acme.states", key: "b" });
    await a.update("increment", { by: 1 });
    await b.update("increment", { by: 2 });
    await Promise.all([a.close(), b.close()]);
    const ownInfo = await runJson(["info", ...where(own, "--subject-prefix", "acme.own")]);
    expect(ownInfo).toMatchObject({ layout: "own", subject: "acme.own.log", revision: 2 });
    const at = ["--subject-prefix", "acme.states", "--key", "b"];
    const sharedInfo = await runJson(["info", ...where(shared, ...at)]);
    expect(sharedInfo).toMatchObject({ layout: "shared", subject: "acme.states.b", entries: 2 });
    const rows = await runJson(["history", ...where(shared, ...at)]);
    expect(rows.map((r: { kind: string }) => r.kind)).toEqual(["genesis", "update"]);
    // Without the prefix the key's subject is not the stream's: reported, not read.
    const missed = await runJson(["info", ...where(shared, "--key", "b")]);
    expect(missed).toMatchObject({ subject: `${shared}.b`, entries: 0, configSafe: false });
  });

  it("history lists every entry with its command, patches, and malformed ones as such", async () => {
    const stream = await seeded();
    const rows = await runJson(["history", ...where(stream)]);
    expect(rows.map((r: { kind: string }) => r.kind)).toEqual([
      "genesis",
      "update",
      "command",
      "malformed",
    ]);
    expect(rows[1]).toMatchObject({
      revision: 2,
      commands: [{ name: "increment", args: { by: 2 } }],
      patches: { count: 1, paths: ["/count"] },
      base: 1,
    });
    expect(rows[1].time).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(rows[2]).toMatchObject({ kind: "command", commands: [{ name: "note" }] });
    expect(rows[3]).toMatchObject({ revision: 4, messageId: "garbage-1", bytes: 9, time: null });
    expect(rows[3].error).toMatch(/^CORRUPT_ENTRY: malformed entry: invalid JSON/);

    const range = await runJson(["history", ...where(stream, "--from", "2", "--to", "3")]);
    expect(range.map((r: { revision: number }) => r.revision)).toEqual([2, 3]);

    const text = await runCli(["history", ...where(stream)]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^REVISION\s+TIME\s+KIND\s+CLIENT\s+MESSAGE-ID\s+BYTES\s+WHAT$/);
    expect(lines[2]).toContain('increment {"by":2} (1 patch: /count)');
    expect(lines[4]).toContain("CORRUPT_ENTRY");
  });

  it("history --from a removed revision says so on stderr and lists from the first retained", async () => {
    const stream = uniqueStream("COMPACTED");
    const a = await openCounter(ctx.server.url, stream);
    await a.update("increment", { by: 1 }); // 2
    const { revision } = await a.compact(); // 3: the log starts there
    await a.close();
    const listed = await runCli(["history", ...where(stream, "--from", "1", "--json")]);
    expect(listed.code).toBe(0);
    expect(listed.stderr).toBe(
      `statesync: warning: TRUNCATED: --from 1 is before the retained history (the first retained revision is ${revision}): revisions before it were compacted or truncated away\n`,
    );
    expect(JSON.parse(listed.stdout).map((r: { revision: number }) => r.revision)).toEqual([
      revision,
    ]);
    const retained = await runCli(["history", ...where(stream, "--from", String(revision))]);
    expect([retained.code, retained.stderr]).toEqual([0, ""]);

    // In a shared stream the revisions before a key's genesis are other keys': nothing removed.
    const shared = uniqueStream("SHAREDFROM");
    const b = await openCounter(ctx.server.url, shared, { key: "a" });
    const c = await openCounter(ctx.server.url, shared, { key: "b" }); // its genesis at 2
    await Promise.all([b.close(), c.close()]);
    const other = await runCli(["history", ...where(shared, "--key", "b", "--from", "1")]);
    expect([other.code, other.stderr]).toEqual([0, ""]);
  });

  it("fails with exit 1 and one line naming the code: unknown stream, bad range, no server", async () => {
    const missing = await runCli(["info", ...where(uniqueStream("MISSING"))]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^statesync: STREAM_CONFIG: stream MISSING_\S+ does not exist/);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    // User info in --server is masked in messages (nats.js ignores it; this server wants none).
    const withUser = ctx.server.url.replace("nats://", "nats://op:s3cret@");
    const masked = await runCli(["info", ...target(withUser, uniqueStream("MISSING"))]);
    expect(masked.stderr).toMatch(/does not exist on nats:\/\/op:\*\*\*@127\.0\.0\.1:\d+\n$/);
    expect(masked.stderr).not.toContain("s3cret");

    const stream = await seeded();
    const bad = await runCli(["history", ...where(stream, "--from", "two")]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe("statesync: VALIDATION: --from must be a non-negative integer");
    const reversed = await runCli(["history", ...where(stream, "--from", "3", "--to", "2")]);
    expect(reversed.stderr.trim()).toBe("statesync: VALIDATION: --from must not be after --to");

    const noStream = await runCli(["info", "--server", ctx.server.url]);
    expect(noStream.code).toBe(1);
    expect(noStream.stderr).toMatch(/^statesync: VALIDATION: --stream is required/);

    const down = await runCli(["info", "--server", "nats://127.0.0.1:1", "--stream", "X"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^statesync: UNAVAILABLE: cannot connect to nats:\/\/127.0.0.1:1/);

    // A new user's typos: a bare form with a slash was read as host "nats" (ENOTFOUND, retried).
    for (const url of ["http://x", "nats:/127.0.0.1:1", "nats//127.0.0.1:1", "nats://h:1/path"]) {
      const badUrl = await runCli(["info", "--server", url, "--stream", "X"]);
      expect(badUrl.stderr, url).toMatch(/^statesync: VALIDATION: --server must be nats:\/\//);
    }
  });

  // Found by a fresh-eyes trial (stop 25): on a stream purged whole, history said "no retained
  // entries in that range" though no range was given.
  it("history says when the log retains nothing at all", async () => {
    const stream = await seeded();
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.purge(stream);
    await nc.close();
    const r = await runCli(["history", ...where(stream)]);
    expect(r.code).toBe(0);
    expect(r.stderr.trim()).toBe("the log retains no entries (a new or purged stream)");
    const ranged = await runCli(["history", ...where(stream, "--to", "2")]);
    expect(ranged.stderr.trim()).toBe("the log retains no entries (a new or purged stream)");
  });

  // Found by a fresh-eyes trial (stop 26): on a stream purged whole, info said "first retained
  // 0" and verify "STOPS at revision 0", as if a revision 0 existed.
  it("info and verify say what a stream purged whole retains: nothing", async () => {
    const stream = await seeded();
    const latestRevision = 4;
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.purge(stream);
    await nc.close();
    const info = await runCli(["info", ...where(stream)]);
    expect(info.code).toBe(0);
    expect(info.stdout).toContain(
      `first retained  none (revisions 1-${latestRevision} were purged or truncated away; the next entry is ${latestRevision + 1})`,
    );
    expect(info.stdout).toContain("model           unknown (the log holds no entries)");
    expect(info.stdout).toContain(
      "warning         the state is not in the log: a replica without a local snapshot starts from the model's initial state",
    );
    const json = JSON.parse((await runCli(["info", ...where(stream, "--json")])).stdout);
    expect(json).toMatchObject({ firstRevision: 0, revision: latestRevision, entries: 0 });
    expect(json.warnings).toEqual([expect.stringMatching(/^the state is not in the log: /)]);
    const verify = await runCli(["verify", ...where(stream, "--model", MODEL)]);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain("result            STOPS: the log retains no entry");
    expect(verify.stdout).toContain("replayed          nothing (the log retains no entry)");
    expect(verify.stderr.trim()).toBe(
      `statesync: TRUNCATED: the log retains no entry: everything up to revision ${latestRevision} was removed`,
    );
    expect(`${info.stdout}${verify.stdout}${verify.stderr}`).not.toMatch(
      /revision 0\b|retained +0\b/,
    );
  });

  it("takes the server from STATESYNC_SERVER", async () => {
    const stream = await seeded();
    const r = await runCli(["info", "--stream", stream, "--json"], {
      STATESYNC_SERVER: ctx.server.url,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).revision).toBe(4);
    // An empty STATESYNC_SERVER is unset, not an empty --server (fresh-eyes trial, stop 26);
    // a bad stream name stops it before it connects to the default.
    const empty = await runCli(["info", "--stream", "a b"], { STATESYNC_SERVER: "" });
    expect(empty.code).toBe(1);
    expect(empty.stderr.trim()).toBe(
      "statesync: VALIDATION: --stream is not a valid stream name (no whitespace, '.', '*', '>', '/')",
    );
  });
});
