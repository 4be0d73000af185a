import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const PROGRAM = fileURLToPath(new URL("./support/special-files.mjs", import.meta.url));

/**
 * Found by a fresh-eyes trial: a FIFO in place of a snapshot file. Opening the replica and
 * `close()` each gave up after their 10 s bound, but the store's read stayed blocked in the
 * thread pool, waiting for a writer, and the process never exited. Every file statesync reads
 * from its directory is now opened without blocking and read only when `fstat` says it is a
 * regular file; anything else is the store's typed error. Each case runs in its own process,
 * which must print what it saw and exit by itself, with status 0, before a generous deadline.
 */
describe("something other than a regular file in a store's directory", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "statesync-special-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /** Runs the program; resolves to the JSON line it printed once it has exited by itself. */
  async function run(...args: string[]): Promise<any> {
    const child = spawn(process.execPath, [PROGRAM, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    const deadline = new Promise<"still running">((r) =>
      setTimeout(() => r("still running"), 30_000),
    );
    const outcome = await Promise.race([exited, deadline]);
    if (outcome === "still running") child.kill("SIGKILL");
    expect(outcome, `${stdout}\n${stderr}`).toBe(0);
    return JSON.parse(stdout);
  }

  it.each([
    ["fifo", "a FIFO"],
    ["socket", "a socket"],
    ["device", "a character device"],
  ])(
    "a snapshot file that is %s: CORRUPT_SNAPSHOT, the replica starts from the log, close() replaces it, the process exits",
    async (kind, described) => {
      const seen = await run("snapshot", dir, kind);
      expect(seen).toEqual({
        load: {
          code: "CORRUPT_SNAPSHOT",
          message: `snapshot k: the file is ${described}, not a regular file`,
        },
        errors: ["CORRUPT_SNAPSHOT"],
        closed: "closed",
        replaced: true,
      });
    },
    60_000,
  );

  it("a snapshot file that is a directory: CORRUPT_SNAPSHOT (it was Node's EISDIR)", async () => {
    const seen = await run("snapshot", dir, "directory");
    expect(seen.load).toEqual({
      code: "CORRUPT_SNAPSHOT",
      message: "snapshot k: the file is a directory, not a regular file",
    });
  }, 60_000);

  it("a pending record that is a FIFO: a damaged record (CORRUPT_PENDING), the others load", async () => {
    const seen = await run("pending", dir, "record");
    expect(seen).toEqual({
      records: [1],
      damaged: [{ seq: 2, reason: "a FIFO, not a regular file" }],
    });
  }, 60_000);

  it.each(["queue", "lock"])(
    "a pending queue's %s file that is a FIFO: QUEUE_FAILED when it opens",
    async (which) => {
      const seen = await run("pending", dir, which);
      expect(seen.open.code).toBe("QUEUE_FAILED");
      expect(seen.open.message).toMatch(/ is a FIFO, not a /);
    },
    60_000,
  );
});
