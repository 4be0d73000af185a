/**
 * globalSetup of the Node test projects (vitest.config.ts): says which nats-server a project's
 * tests start (`NATS_SERVER_BIN` from the project's `env`, else the one `startNatsServer` finds)
 * and checks that it is there and is the version the project's name promises
 * (`expectedServerVersion` provided by the config), so a missing or wrong binary fails at once
 * with a hint instead of in every test.
 */
import { execFileSync } from "node:child_process";
import { findNatsServer } from "@statesync/node";
import type { TestProject } from "vitest/node";

/** `"2.10.27"` from `nats-server --version` (`nats-server: v2.10.27`). */
export function serverVersion(bin: string): string {
  const out = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
  const m = /v?(\d+\.\d+\.\d+\S*)/.exec(out);
  if (!m) throw new Error(`cannot read the version of ${bin}: ${out}`);
  return m[1]!;
}

export default function setup(project: TestProject): void {
  const env = (project.config.env ?? {}) as Record<string, string | undefined>;
  const configured = env.NATS_SERVER_BIN;
  let bin: string;
  try {
    bin = findNatsServer(configured);
  } catch (err) {
    throw new Error(
      `project ${project.name}: ${String(err)}${configured ? "; fetch it with `bash scripts/fetch-nats-server.sh` (scripts/test.sh does)" : ""}`,
    );
  }
  const version = serverVersion(bin);
  const expected = env.STATESYNC_EXPECT_SERVER_VERSION;
  if (expected && !version.startsWith(expected)) {
    throw new Error(`project ${project.name}: ${bin} is nats-server ${version}, not ${expected}.x`);
  }
  console.log(`project ${project.name}: nats-server ${version} (${bin})`);
}
