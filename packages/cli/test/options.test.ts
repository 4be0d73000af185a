import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL, openCounter, runCli, runJson, uniqueStream } from "./helpers.js";

const COMMANDS = [
  "info",
  "history",
  "tail",
  "state",
  "verify",
  "compact",
  "export",
  "import",
  "migrate",
];

/** The options every command shares: help, credentials as the `nats` CLI takes them, checks. */

/**
 * The tests below each start the CLI 15 to 20 times in a row: each start costs 1 to 4 s of CPU
 * on 2 cores shared with the other test files, which ran past the default 60 s twice.
 */
const SPAWNS_TIMEOUT_MS = 180_000;

describe("statesync options", () => {
  it(
    "has --help on every command, listing the common options; npx finds the bin",
    { timeout: SPAWNS_TIMEOUT_MS },
    async () => {
      for (const command of COMMANDS) {
        const r = await runCli([command, "--help"]);
        expect(r.code, command).toBe(0);
        for (const flag of [
          "--server <url>",
          "--stream <name>",
          "--key <key>",
          "--creds <file>",
          "--json",
        ]) {
          expect(r.stdout, `${command} ${flag}`).toContain(flag);
        }
      }
      const root = fileURLToPath(new URL("../../..", import.meta.url));
      const { stdout } = await promisify(execFile)("npx", ["--no-install", "statesync", "--help"], {
        cwd: root,
      });
      expect(stdout).toContain("Usage: statesync [options] [command]");
      for (const command of COMMANDS) expect(stdout).toContain(`  ${command} `);
    },
  );

  it(
    "refuses inconsistent credentials and unreadable files before connecting",
    { timeout: SPAWNS_TIMEOUT_MS },
    async () => {
      const at = ["--server", "nats://127.0.0.1:1", "--stream", "S"];
      const cases: Array<[string[], string]> = [
        [["--user", "u"], "statesync: VALIDATION: --password is needed with --user"],
        [["--password", "p"], "statesync: VALIDATION: --user is needed with --password"],
        [
          ["--token", "t", "--user", "u", "--password", "p"],
          "statesync: VALIDATION: give only one of --creds, --user/--password and --token",
        ],
        [["--tls-cert", "c.pem"], "statesync: VALIDATION: --tls-cert and --tls-key go together"],
        [
          ["--creds", "/nonexistent/op.creds"],
          "statesync: VALIDATION: --creds /nonexistent/op.creds cannot be read",
        ],
        [["--timeout", "0"], "statesync: VALIDATION: --timeout must be at least 1 ms"],
        // An empty value read as zod's own words (stop 25's trial: "Too small: expected string
        // to have >=1 characters").
        [
          ["--server", ""],
          "statesync: VALIDATION: --server is empty: give nats:// or tls:// URLs or host:port",
        ],
        [["--user", "", "--password", "p"], "statesync: VALIDATION: --user is empty"],
        [["--token", ""], "statesync: VALIDATION: --token is empty"],
        [
          ["--key", "a..b"],
          "statesync: VALIDATION: --key must be dot-separated tokens of [A-Za-z0-9_-]",
        ],
        [
          ["--subject-prefix", "$X"],
          "statesync: VALIDATION: --subject-prefix must be dot-separated subject tokens without wildcards or whitespace, not starting with '$'",
        ],
      ];
      for (const [args, line] of cases) {
        // A case giving its own --server replaces the one of `at` (an option given twice is refused).
        const base = args.includes("--server") ? at.slice(2) : at;
        const r = await runCli(["info", ...base, ...args]);
        expect(r.code, args.join(" ")).toBe(1);
        expect(r.stderr.trim(), args.join(" ")).toBe(line);
      }
      // Regression test (fresh-eyes trial): a stream whose name cannot start subjects read
      // "invalid subject prefix undefined"; --subject-prefix was never given.
      const dollar = await runCli(["info", "--server", "nats://127.0.0.1:1", "--stream", "$JS"]);
      expect(dollar.code).toBe(1);
      expect(dollar.stderr.trim()).toBe(
        "statesync: VALIDATION: --stream $JS cannot start the state's subjects ($JS.log): NATS reserves subjects starting with '$'; give --subject-prefix",
      );
      // A named file may be a pipe (--creds <(vault read …)), but a device without end is not
      // read until memory runs out: refused past 1 MiB (a fresh-eyes trial).
      const endless = await runCli(
        ["info", ...at, "--creds", "/dev/zero"],
        {},
        { killAfterMs: 30_000 },
      );
      expect(endless).toMatchObject({ code: 1, signal: null });
      expect(endless.stderr.trim()).toBe(
        "statesync: VALIDATION: --creds /dev/zero holds more than 1048576 bytes",
      );
      const unknown = await runCli(["info", ...at, "--bogus"]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe(
        `statesync: VALIDATION: unknown option '--bogus' for "statesync info" (statesync info --help)\n`,
      );
      // A fresh-eyes trial: `--stream Q --stream S` used S in silence, for compact (which purges)
      // as for every command. An option with a value given twice is a usage error; a flag is not.
      for (const args of [
        ["compact", "--stream", "Q", "--stream", "S", "--model", "m.js"],
        ["info", "--stream", "Q", "--server", "nats://127.0.0.1:1", "-s", "nats://127.0.0.1:2"],
        ["history", "--stream", "Q", "--key", "a", "--key=b"],
      ]) {
        const twice = await runCli(args);
        expect(twice.code, args.join(" ")).toBe(1);
        expect(twice.stderr).toMatch(
          /^statesync: VALIDATION: option '.*' given more than once for "statesync \w+": give it once \(statesync \w+ --help\)\n$/,
        );
      }
      const flags = await runCli(["info", ...at, "--json", "--json"]);
      expect(flags.stderr).not.toContain("more than once");
    },
  );

  describe("against a server that wants credentials", () => {
    let users: NatsServer;
    let tokens: NatsServer;
    beforeAll(async () => {
      users = await startNatsServer({
        // "reader" may subscribe only on its own inbox prefix (docs/permissions.md).
        extraConfig: `authorization { users = [
          { user: "op", password: "s3cret" },
          { user: "reader", password: "r3ad", permissions: { publish: ">", subscribe: "_INBOX_reader.>" } }
        ] }`,
      });
      tokens = await startNatsServer({ extraConfig: 'authorization { token: "t0ken" }' });
    });
    afterAll(async () => {
      await users?.stop();
      await tokens?.stop();
    });

    it("connects with --user/--password and --token, and names a refusal PERMISSION_DENIED", async () => {
      const stream = uniqueStream("AUTH");
      const a = await openCounter(users.url, stream, {
        connectOptions: { user: "op", pass: "s3cret" },
      });
      await a.update("increment", { by: 1 });
      await a.close();
      const info = await runJson([
        "info",
        "--server",
        users.url,
        "--stream",
        stream,
        "--user",
        "op",
        "--password",
        "s3cret",
      ]);
      expect(info.revision).toBe(2);
      const wrong = await runCli([
        "info",
        "--server",
        users.url,
        "--stream",
        stream,
        "--user",
        "op",
        "--password",
        "nope",
      ]);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(/^statesync: PERMISSION_DENIED: cannot connect to /);
      // Credentials in the server URL never reach the error line.
      const inUrl = await runCli([
        "info",
        "--server",
        users.url.replace("nats://", "nats://op:n0tThis@"),
        "--stream",
        stream,
      ]);
      expect(inUrl.code).toBe(1);
      expect(inUrl.stderr).toMatch(
        /^statesync: PERMISSION_DENIED: cannot connect to nats:\/\/op:\*\*\*@/,
      );
      expect(inUrl.stderr).not.toContain("n0tThis");

      // A user who may subscribe only on its own inbox prefix (a fresh-eyes trial: the readers
      // of docs/permissions.md could not use the CLI at all).
      const reader = ["info", "--server", users.url, "--stream", stream, "--user", "reader"];
      const denied = await runCli([...reader, "--password", "r3ad"]);
      expect(denied.stderr).toMatch(
        /^statesync: PERMISSION_DENIED: .*_INBOX\..*pass its --inbox-prefix/,
      );
      const asReader = await runJson([
        ...reader,
        "--password",
        "r3ad",
        "--inbox-prefix",
        "_INBOX_reader",
      ]);
      expect(asReader.revision).toBe(2);
      const bad = await runCli([...reader, "--password", "r3ad", "--inbox-prefix", "_INBOX.>"]);
      expect(bad.stderr).toMatch(/^statesync: VALIDATION: --inbox-prefix must be/);

      const tokenStream = uniqueStream("TOKEN");
      const b = await openCounter(tokens.url, tokenStream, { connectOptions: { token: "t0ken" } });
      await b.close();
      const viaToken = await runJson([
        "info",
        "--server",
        tokens.url,
        "--stream",
        tokenStream,
        "--token",
        "t0ken",
      ]);
      expect(viaToken.revision).toBe(1);
      const none = await runCli(["info", "--server", tokens.url, "--stream", tokenStream]);
      expect(none.stderr).toMatch(/^statesync: PERMISSION_DENIED: /);
    });
  });

  describe("against a server without JetStream", () => {
    let plain: NatsServer;
    let withJs: NatsServer;
    beforeAll(async () => {
      plain = await startNatsServer({ jetstream: false });
      withJs = await startNatsServer();
    });
    afterAll(async () => {
      await plain?.stop();
      await withJs?.stop();
    });

    // A trial: import said "… set the `domain` option … Retrying." and exited 1.
    it("import says JetStream is not reachable, without a program's advice, exit 1", async () => {
      const stream = uniqueStream("NOJS");
      const a = await openCounter(withJs.url, stream);
      await a.update("increment", { by: 1 });
      await a.close();
      const file = join(await mkdtemp(join(tmpdir(), "statesync-nojs-")), "backup.json");
      expect(
        (
          await runCli([
            "export",
            "--server",
            withJs.url,
            "--stream",
            stream,
            "--model",
            MODEL,
            file,
          ])
        ).code,
      ).toBe(0);
      const r = await runCli([
        "import",
        "--server",
        plain.url,
        "--stream",
        stream,
        "--model",
        MODEL,
        file,
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^statesync: UNAVAILABLE: JetStream is not reachable in this account: nobody answered .*\(503 no responders\).*\. Enable JetStream on the server/,
      );
      expect(r.stderr).not.toMatch(/Retrying|domain/);
    });

    // A fresh-eyes trial read only "UNAVAILABLE: cannot read stream S: 503" here.
    it.each(["info", "history", "tail"])(
      "%s says JetStream is not reachable, exit 1",
      async (c) => {
        const r = await runCli([c, "--server", plain.url, "--stream", "NOJS"]);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(
          /^statesync: UNAVAILABLE: JetStream is not reachable on nats:\/\/127\.0\.0\.1:\d+ \(nats-server [\d.]+\): nobody answered \$JS\.API\.STREAM\.INFO\.NOJS \(503 no responders\)\. Enable JetStream/,
        );
      },
    );
  });
});
