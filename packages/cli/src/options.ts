/**
 * The options every command takes (where the state lives, how to reach and authenticate to the
 * server, `--json`) and their validation with zod. Commander collects raw strings; each command
 * validates them here, so every bad argument is one `VALIDATION` error naming its option.
 */
import { Command, Option } from "commander";
import {
  isTcpServerUrl,
  isValidKey,
  isValidStreamName,
  isValidSubjectPrefix,
  resolveLayout,
  StateSyncError,
} from "@statesync/node";
import { z } from "zod";

/** Default server when neither `--server` nor `STATESYNC_SERVER` is given. */
export const DEFAULT_SERVER = "nats://127.0.0.1:4222";

const file = (flag: string) => z.string().min(1, `${flag} needs a file`).optional();

/** A non-negative integer given as decimal digits (a revision, a count). */
export const revisionSchema = z
  .string()
  .regex(/^\d+$/, "must be a non-negative integer")
  .transform(Number)
  .pipe(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER, "is too large"));

/**
 * A revision of an entry (`history --from/--to`, `tail --from`): 1 or more. Revision 0 holds no
 * entry (it is the state before the first, `state --at 0`): `history --to 0` listed an empty
 * range and exited 0, where `--from 5 --to 3` is a usage error (a trial).
 */
export const entryRevisionSchema = revisionSchema.refine((n) => n >= 1, {
  message:
    "must be 1 or more: revision 0 holds no entry (state --at 0 prints the state before the first)",
});

/** What every command takes, validated. */
const commonSchema = z
  .object({
    server: z
      .string()
      .min(1, "is empty: give nats:// or tls:// URLs or host:port")
      .refine((s) => s.split(",").every((x) => isTcpServerUrl(x.trim())), {
        message: "must be nats:// or tls:// URLs or host:port, comma-separated",
      }),
    stream: z
      .string({ error: "is required (the stream the state lives in)" })
      .refine(isValidStreamName, "is not a valid stream name (no whitespace, '.', '*', '>', '/')"),
    key: z.string().refine(isValidKey, "must be dot-separated tokens of [A-Za-z0-9_-]").optional(),
    subjectPrefix: z
      .string()
      .refine(
        isValidSubjectPrefix,
        "must be dot-separated subject tokens without wildcards or whitespace, not starting with '$'",
      )
      .optional(),
    creds: file("--creds"),
    user: z.string().min(1, "is empty").optional(),
    password: z.string().optional(),
    token: z.string().min(1, "is empty").optional(),
    inboxPrefix: z
      .string()
      .refine(isValidSubjectPrefix, "must be dot-separated subject tokens without wildcards")
      .optional(),
    tlsCert: file("--tls-cert"),
    tlsKey: file("--tls-key"),
    tlsCa: file("--tls-ca"),
    timeout: z
      .string()
      .regex(/^\d+$/, "must be a number of milliseconds")
      .transform(Number)
      .pipe(
        z.number().int().min(1, "must be at least 1 ms").max(600_000, "must be at most 600000 ms"),
      ),
    json: z.boolean().optional(),
  })
  .superRefine((o, ctx) => {
    const issue = (path: string | undefined, message: string) =>
      ctx.addIssue({ code: "custom", path: path === undefined ? [] : [path], message });
    const schemes = [o.creds, o.user, o.token].filter((x) => x !== undefined).length;
    if (schemes > 1) issue(undefined, "give only one of --creds, --user/--password and --token");
    if (o.user !== undefined && o.password === undefined)
      issue("password", "is needed with --user");
    if (o.password !== undefined && o.user === undefined)
      issue("user", "is needed with --password");
    // The subjects start with the stream name unless --subject-prefix says otherwise.
    if (o.subjectPrefix === undefined && !isValidSubjectPrefix(o.stream)) {
      issue(
        "stream",
        `${o.stream} cannot start the state's subjects (${o.stream}.${o.key ?? "log"}): NATS reserves subjects starting with '$'; give --subject-prefix`,
      );
    }
    if ((o.tlsCert === undefined) !== (o.tlsKey === undefined)) {
      issue(undefined, "--tls-cert and --tls-key go together");
    }
  });

/** The common options, validated (see {@link addCommonOptions}). */
export type CommonOptions = z.output<typeof commonSchema>;

/** `tlsCert` → `--tls-cert`. */
export function flagOf(path: PropertyKey | undefined): string {
  if (typeof path !== "string") return "argument";
  return `--${path.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * Validates `raw` with `schema`; throws `VALIDATION` naming the first bad option
 * (`--at must be a non-negative integer`).
 */
export function parseWith<T extends z.ZodType>(schema: T, raw: unknown): z.output<T> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length > 0 ? `${flagOf(issue.path[0])} ` : "";
  throw new StateSyncError("VALIDATION", `${where}${issue.message}`, {
    cause: parsed.error,
  });
}

/**
 * Validates the common options of a command (and checks that stream, key and subject prefix
 * make a layout, as the log would: `VALIDATION` otherwise).
 */
export function parseCommon(raw: Record<string, unknown>): CommonOptions {
  const o = parseWith(commonSchema, raw);
  resolveLayout(o.stream, o.key, o.subjectPrefix);
  return o;
}

/**
 * Adds the common options to `command`: location (`--stream`, `--key`, `--subject-prefix`),
 * server and credentials (as the `nats` CLI takes them), request timeout and `--json`.
 */
export function addCommonOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "-s, --server <url>",
        "NATS server URL(s), comma-separated (tls:// requires TLS, for all or none)",
      )
        .env("STATESYNC_SERVER")
        .default(DEFAULT_SERVER),
    )
    .option("--stream <name>", "the JetStream stream the state lives in")
    .option("--key <key>", "the state's key in a shared stream (shared layout)")
    .option("--subject-prefix <prefix>", "first subject tokens (default: the stream name)")
    .option("--creds <file>", "NATS credentials file (JWT and NKey seed)")
    .option("--user <user>", "user name (with --password)")
    .option("--password <password>", "password (with --user)")
    .option("--token <token>", "authentication token")
    .option(
      "--inbox-prefix <prefix>",
      "subject prefix of reply inboxes (default _INBOX), for a user who may subscribe only there",
    )
    .option("--tls-cert <file>", "client certificate (PEM), with --tls-key")
    .option("--tls-key <file>", "client private key (PEM)")
    .option("--tls-ca <file>", "CA certificate(s) to trust (PEM)")
    .option("--timeout <ms>", "timeout of each request to the server", "5000")
    .option("--json", "print JSON for scripts instead of tables");
}
