import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ERROR_CODES, openSynchronizer } from "@statesync/node";
import { beforeAll, describe, expect, it } from "vitest";
import { cutTo } from "../src/output.js";
import { visible } from "../src/visible.js";
// @ts-expect-error: a plain ES module (as operators hand models over), without declarations
import { ledger } from "./fixtures/ledger-model.mjs";
import {
  runCli,
  startTail,
  target,
  tcp,
  uniqueStream,
  useNatsServer,
  type CliResult,
} from "./helpers.js";

/**
 * Regression tests (fresh-eyes trial): every command that prints entries or states, run over a
 * log holding the whole hostile corpus (packages/node/test/fixtures/hostile/manifest.json) and
 * entries the envelope accepts but a terminal or a `Date` would not: a writer's time past the
 * last date JavaScript can represent (`history` and `tail` died on it with `UNAVAILABLE: Invalid
 * time value`, printing nothing), and client ids, command names, patch paths, model names,
 * message ids and state values holding terminal escapes, C1 controls and bidi overrides (printed
 * raw, they reached the operator's terminal). No command may crash, and no output may carry a
 * raw control character; `--json` keeps every value as the log has it.
 */
const LEDGER = fileURLToPath(new URL("./fixtures/ledger-model.mjs", import.meta.url));
const manifest = JSON.parse(
  readFileSync(new URL("../../node/test/fixtures/hostile/manifest.json", import.meta.url), "utf8"),
) as { marker: string; cases: Array<{ name: string; expected: string; payload: string }> };

/** What a terminal acts on or reorders: C0 but the newline, DEL, C1, bidi controls, LS and PS. */
const RAW_CONTROL =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

const ESC_CLIENT = "\u001b[31mRED\u001b[0m\u0007";
const C1_BIDI_CLIENT = "\u009b31m\u202eevil\u2066";
const NOTE = "\u001b]0;pwned\u0007 \u202e\u0085 \u2028";
const ESC_MESSAGE_ID = "\u001b[1mid";
const FAR_TS = 8_640_000_000_000_001; // one ms past the last date JavaScript represents
const INITIAL_HASH = "587082a37c9dea3a1dd32c62633bc6c0005c13bf4a6941d6293a612a0a24d871";

const head = { v: 1, ts: 1_700_000_000_000, client: "other-program" };
/** A client id as the CLIENT column prints it: made visible, then cut to 24 (`ENTRY_COLUMNS`). */
const shown = (client: string) => cutTo(visible(client), 24);
const command = (over: object) =>
  JSON.stringify({ ...head, kind: "command", seed: 7, name: "note", args: { text: "x" }, ...over });

/** Entries a replica applies or skips, with the message id to append them with. */
const passing: Array<{ name: string; data: string; messageId?: string }> = [
  { name: "ts-past-dates", data: command({ ts: FAR_TS }) },
  { name: "ts-max-safe", data: command({ ts: Number.MAX_SAFE_INTEGER }) },
  { name: "client-escapes", data: command({ client: ESC_CLIENT }), messageId: ESC_MESSAGE_ID },
  { name: "client-c1-bidi", data: command({ client: C1_BIDI_CLIENT }) },
  { name: "note-escapes", data: command({ args: { text: NOTE } }) },
  {
    name: "update-escapes", // skipped (another base); history still shows its commands and paths
    data: JSON.stringify({
      ...head,
      kind: "update",
      base: 1,
      seed: 7,
      commands: [{ name: "\u001b[2Jwipe", args: { "\u009bk": "\u202ev" } }],
      patches: [{ op: "add", path: ["notes", "\u001b[1m"], value: 1 }],
    }),
  },
  {
    name: "genesis-escapes", // a second genesis: skipped
    data: JSON.stringify({
      ...head,
      kind: "genesis",
      model: "\u001b[5mledger\u202e",
      version: 1,
      initialHash: INITIAL_HASH,
    }),
  },
];

/** Where every replica stops: first one whose name carries escapes (verify names it). */
const stopping = [
  { name: "unknown-command-escapes", data: command({ name: "\u001b[2Jwipe\u202e\u009b" }) },
];
/** Last of all, so `info` reports its model name. */
const lastSnapshot = JSON.stringify({
  ...head,
  kind: "snapshot",
  base: 1,
  model: "\u001b[31mledger",
  version: 1,
  initialHash: INITIAL_HASH,
  state: { count: 0, ops: [], notes: [] },
});

const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));
const enc = (s: string) => new TextEncoder().encode(s);

describe("statesync over hostile entries", () => {
  const ctx = useNatsServer();
  const stream = uniqueStream("HOSTILE");
  const where = (...more: string[]) => target(ctx.server.url, stream, ...more);
  /** Revisions: the marker (the last entry every replica applies) and the latest. */
  const at = { marker: 0, latest: 0, farTs: 0, escClient: 0 };

  beforeAll(async () => {
    const sync = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: ledger,
      snapshots: false,
      live: false,
      compaction: false,
    });
    await sync.close(); // the genesis entry, revision 1
    const nc = await tcp(ctx.server.url);
    const js = nc.jetstream();
    let n = 0;
    // Published raw, as another program would (the log refuses such a message id itself).
    const append = async (data: Uint8Array, msgID = `hostile-${++n}`) =>
      (await js.publish(`${stream}.log`, data, { msgID })).seq;
    const stalls = manifest.cases.filter((c) => c.expected.startsWith("stall:"));
    for (const c of manifest.cases.filter((c) => !stalls.includes(c))) await append(b64(c.payload));
    for (const c of passing) {
      const revision = await append(enc(c.data), c.messageId);
      if (c.name === "ts-past-dates") at.farTs = revision;
      if (c.name === "client-escapes") at.escClient = revision;
    }
    at.marker = await append(b64(manifest.marker));
    for (const c of stopping) await append(enc(c.data));
    for (const c of stalls) await append(b64(c.payload));
    at.latest = await append(enc(lastSnapshot));
    await nc.close();
  }, 60_000);

  /** Ended as a command may: 0, or 1 with one line naming a code (never a crash or a bug). */
  function expectSound(r: Pick<CliResult, "code" | "stdout" | "stderr">): void {
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    if (r.code === 0) return;
    expect(r.code).toBe(1);
    const code = /^statesync: ([A-Z_]+): /.exec(r.stderr)?.[1];
    expect(ERROR_CODES).toContain(code);
    expect(code).not.toBe("UNAVAILABLE"); // the server is up
  }

  it("history lists every entry, in text and --json", async () => {
    const text = await runCli(["history", ...where()]);
    expectSound(text);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(at.latest + 1); // the header, then one line per entry
    const far = lines.find((l) => l.startsWith(`${at.farTs} `))!;
    expect(far).toMatch(new RegExp(`^${at.farTs}\\s+${FAR_TS}\\s+command\\s`));
    const esc = lines.find((l) => l.startsWith(`${at.escClient} `))!;
    // Escaped, then cut to the column (24): "\u001b[31mRE…1b[0m\u0007"; --json has it whole.
    expect(esc).toContain(shown(ESC_CLIENT));
    expect(shown(ESC_CLIENT)).toMatch(/^\\u001b\[31mRE…/);
    expect(esc).toContain("\\u001b[1mid");
    expect(text.stdout).toContain(shown(C1_BIDI_CLIENT));

    const json = await runCli(["history", ...where(), "--json"]);
    expectSound(json);
    const rows = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((r) => r.revision)).toEqual(Array.from({ length: at.latest }, (_, i) => i + 1));
    expect(rows[at.farTs - 1]).toMatchObject({ time: String(FAR_TS), kind: "command" });
    expect(rows[at.escClient - 1]).toMatchObject({
      client: ESC_CLIENT,
      messageId: ESC_MESSAGE_ID,
    });
    expect(rows.some((r) => r.client === C1_BIDI_CLIENT)).toBe(true);
  });

  it("tail follows every entry, in text and --json", async () => {
    for (const json of [false, true]) {
      const tail = startTail([...where("--from", "1"), ...(json ? ["--json"] : [])]);
      const last = json ? `{"revision":${at.latest},` : `\n${at.latest} `;
      await tail.until(({ stdout, stderr }) => stdout.includes(last) || stderr.includes(": "));
      tail.child.kill("SIGTERM");
      const end = await tail.exited;
      const out = tail.out();
      expectSound({ ...end, ...out });
      expect(end.code).toBe(0);
      if (json) {
        const rows = out.stdout
          .trimEnd()
          .split("\n")
          .map((l) => JSON.parse(l));
        expect(rows).toHaveLength(at.latest);
        expect(rows[at.farTs - 1]).toMatchObject({ time: String(FAR_TS) });
      } else {
        expect(out.stdout).toContain(shown(ESC_CLIENT));
      }
    }
  });

  it("info reports the log, in text and --json", async () => {
    const text = await runCli(["info", ...where()]);
    expectSound(text);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/model\s+\\u001b\[31mledger v1 \(from the snapshot entry/);
    const json = await runCli(["info", ...where(), "--json"]);
    expectSound(json);
    expect(JSON.parse(json.stdout)).toMatchObject({
      revision: at.latest,
      model: { name: "\u001b[31mledger" },
    });
  });

  it("state prints the state at the marker, and stops where every replica stops", async () => {
    const text = await runCli(["state", ...where("--model", LEDGER, "--at", String(at.marker))]);
    expectSound(text);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('"\\u001b]0;pwned\\u0007 \\u202e\\u0085 \\u2028"');
    const json = await runCli([
      "state",
      ...where("--model", LEDGER, "--at", String(at.marker), "--json"),
    ]);
    expectSound(json);
    expect(JSON.parse(json.stdout).state.notes).toContain(NOTE);
    const latest = await runCli(["state", ...where("--model", LEDGER)]);
    expectSound(latest);
  });

  it("verify stops at the first stop, naming it without raw escapes", async () => {
    for (const json of [[], ["--json"]]) {
      const r = await runCli(["verify", ...where("--model", LEDGER, ...json)]);
      expectSound(r);
      expect(r.stderr).toMatch(/^statesync: UNKNOWN_COMMAND: /);
      if (json.length > 0) expect(JSON.parse(r.stdout)).toMatchObject({ stoppedAt: at.marker + 1 });
    }
  });

  it("export backs up the state at the marker", async () => {
    for (const json of [[], ["--json"]]) {
      const file = join(ctx.dir, `hostile-${json.length}.json`);
      const r = await runCli([
        "export",
        file,
        ...where("--model", LEDGER, "--at", String(at.marker), ...json),
      ]);
      expectSound(r);
      expect(r.code).toBe(0);
      const backup = JSON.parse(readFileSync(file, "utf8")) as { state: { notes: string[] } };
      expect(backup.state.notes).toContain(NOTE);
    }
  });
});
