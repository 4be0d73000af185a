import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

/**
 * `scripts/setup.sh`, which `npm run demo:web` and `npm run demo` run before starting: it builds
 * only when the last build is not current (a source, config or the lockfile changed since), so a
 * second start does not rebuild everything. Run on a copy in a scratch workspace with a fake
 * `npm` that records its calls and writes what a build writes (dist/, tsbuildinfo); file times
 * are set explicitly, never waited for.
 */
const setupScript = fileURLToPath(new URL("../../../scripts/setup.sh", import.meta.url));

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Workspace {
  readonly root: string;
  /** Runs setup.sh; returns its output and the npm calls it made. */
  setup(env?: Record<string, string>): { output: string; npm: string[] };
  /** Sets the modification time of `path` (relative to the root) to `secondsAgo` ago. */
  age(path: string, secondsAgo: number): void;
}

function workspace(): Workspace {
  const root = mkdtempSync(join(tmpdir(), "statesync-setup-"));
  made.push(root);
  const files = [
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "scripts/setup.sh",
    "packages/core/package.json",
    "packages/core/src/index.ts",
    "examples/board/src/app.ts",
    "node_modules/.package-lock.json",
  ];
  for (const file of files) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), "{}\n");
  }
  copyFileSync(setupScript, join(root, "scripts/setup.sh"));
  // A fake npm: logs its arguments; `run --silent build` writes outputs as tsc -b and vite do.
  const bin = join(root, ".bin");
  mkdirSync(bin);
  writeFileSync(
    join(bin, "npm"),
    [
      "#!/usr/bin/env bash",
      'echo "$*" >>"$NPM_LOG"',
      'if [ "$*" = "run --silent build" ]; then',
      "  mkdir -p packages/core/dist examples/board/dist",
      "  echo out >packages/core/dist/index.js",
      "  echo out >packages/core/tsconfig.tsbuildinfo",
      "  echo out >examples/board/dist/index.html",
      "fi",
    ].join("\n"),
  );
  chmodSync(join(bin, "npm"), 0o755);
  const log = join(root, ".npm-log");
  const age = (path: string, secondsAgo: number) => {
    const t = Date.now() / 1000 - secondsAgo;
    utimesSync(join(root, path), t, t);
  };
  // Everything older than what the script writes; the installed packages newer than the lockfile.
  for (const file of files) age(file, 600);
  for (const dir of ["packages/core/src", "packages/core", "packages", "examples/board/src"]) {
    age(dir, 600);
  }
  for (const dir of ["examples/board", "examples", "."]) age(dir, 600);
  age("node_modules/.package-lock.json", 500);
  return {
    root,
    age,
    setup(env = {}) {
      writeFileSync(log, "");
      const output = execFileSync("bash", [join(root, "scripts/setup.sh")], {
        cwd: root,
        encoding: "utf8",
        env: {
          ...process.env,
          PATH: `${bin}:${process.env["PATH"]}`,
          NPM_LOG: log,
          NATS_SERVER_BIN: process.execPath, // any executable: the server check passes
          STATESYNC_FORCE_BUILD: "",
          ...env,
        },
      });
      const npm = readFileSync(log, "utf8").split("\n").filter(Boolean);
      return { output, npm };
    },
  };
}

describe("scripts/setup.sh (run by npm run demo:web and npm run demo)", () => {
  it("builds a fresh clone once; the next start finds the build current, its outputs included", () => {
    const ws = workspace();
    const first = ws.setup();
    expect(first.npm).toEqual(["run --silent build"]);
    // The build created dist/ folders, which touched their parents: not a reason to build again.
    const second = ws.setup();
    expect(second.npm).toEqual([]);
    expect(second.output).toContain("build is current");
  });

  it("builds again when a source, a config or the lockfile changed, or a file was deleted", () => {
    const ws = workspace();
    ws.setup();
    const stamp = "node_modules/.statesync-build-stamp";
    for (const changed of ["packages/core/src/index.ts", "tsconfig.json", "package-lock.json"]) {
      ws.age(stamp, 300);
      ws.age(changed, 100); // edited after the last build
      expect(ws.setup().npm, changed).toContain("run --silent build");
      ws.age(changed, 600);
      expect(ws.setup().npm, `${changed}, then unchanged`).toEqual([]);
    }
    ws.age(stamp, 300);
    rmSync(join(ws.root, "examples/board/src/app.ts")); // touches its folder
    expect(ws.setup().npm).toEqual(["run --silent build"]);
  });

  it("reinstalls when the lockfile is newer than the installed packages; rebuilds when forced", () => {
    const ws = workspace();
    ws.setup();
    expect(ws.setup({ STATESYNC_FORCE_BUILD: "1" }).npm).toEqual(["run --silent build"]);
    ws.age("package-lock.json", 100);
    expect(ws.setup().npm[0]).toMatch(/^ci\b/);
  });
});
