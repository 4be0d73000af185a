/* global process, console */
// Runs inside a scratch app (scripts/install-test.sh copies it there, next to node_modules):
// checks what the tarballs installed, then runs every compiled README example for Node (dist/,
// except the browser ones and counter.js, a module) and zod-behaviour.js against a throwaway
// nats-server on a free port, each in its own process with NATS_URL set. Exits non-zero on the
// first failure.
// Usage: node run-examples.mjs LICENSE_FILE
import { execFile } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { startNatsServer } from "@statesync/node";

const run = promisify(execFile);
const license = readFileSync(process.argv[2], "utf8");
const problems = [];
for (const name of ["core", "node", "browser", "playwright"]) {
  const dir = join("node_modules", "@statesync", name);
  if (readFileSync(join(dir, "LICENSE"), "utf8") !== license) {
    problems.push(`${dir}/LICENSE differs from the repository's LICENSE`);
  }
  if (!existsSync(join(dir, "README.md"))) problems.push(`${dir} has no README.md`);
  for (const peer of ["zod", "immer"]) {
    if (existsSync(join(dir, "node_modules", peer))) {
      problems.push(`${dir} got its own ${peer}: a peer dependency must resolve to the app's`);
    }
  }
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}

const examples = readdirSync("dist", { recursive: true, encoding: "utf8" })
  .filter(
    (file) =>
      file.endsWith(".js") &&
      !file.startsWith("browser") &&
      file !== "entry-points.js" &&
      file !== "root/counter.js",
  )
  .sort();
const server = await startNatsServer();
try {
  for (const file of examples) {
    const env = { ...process.env, NATS_URL: server.url };
    try {
      const { stdout } = await run(process.execPath, [join("dist", file)], {
        env,
        timeout: 60_000,
      });
      console.log(
        `  ok ${file}${stdout.trim() ? `: ${stdout.trim().replaceAll("\n", " | ")}` : ""}`,
      );
    } catch (error) {
      console.error(`  FAILED ${file}\n${error.stdout ?? ""}${error.stderr ?? error}`);
      process.exitCode = 1;
      break;
    }
  }
} finally {
  await server.stop();
}
