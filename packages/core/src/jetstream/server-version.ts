import { StateSyncError } from "../errors.js";
import type { ServerInfoLike } from "./nats-types.js";

/**
 * First nats-server version that checks `Nats-Expected-Last-Subject-Sequence` at apply time on a
 * cluster (jetstream-notes "Conditional append"): before it, two concurrent conditional writers
 * on one subject can both succeed.
 */
export const MIN_CLUSTERED_SHARED_VERSION = "2.9.21";

function parse(version: string): [number, number, number, boolean] | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+.*)?$/.exec(version.trim());
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] !== undefined];
}

/**
 * Compares two server versions as semver ("2.10.0" is newer than "2.9.21"; a pre-release is
 * older than its release). Returns a negative number, 0 or a positive number; undefined when
 * either is not a version.
 */
export function compareServerVersions(a: string, b: string): number | undefined {
  const x = parse(a);
  const y = parse(b);
  if (!x || !y) return undefined;
  for (let i = 0; i < 3; i++) {
    const d = (x[i] as number) - (y[i] as number);
    if (d !== 0) return d;
  }
  if (x[3] === y[3]) return 0;
  return x[3] ? -1 : 1;
}

/**
 * Throws `StateSyncError("UNSUPPORTED_SERVER")` when the shared layout (expected last subject
 * sequence) runs on a clustered server older than {@link MIN_CLUSTERED_SHARED_VERSION}, or on a
 * clustered server whose version cannot be read. A standalone server (no `cluster` in INFO) of
 * any version is fine; so is the own-stream layout everywhere.
 */
export function assertSharedLayoutSupported(info: ServerInfoLike | undefined): void {
  if (!info || !info.cluster) return;
  const cmp = compareServerVersions(info.version, MIN_CLUSTERED_SHARED_VERSION);
  if (cmp === undefined || cmp < 0) {
    throw new StateSyncError(
      "UNSUPPORTED_SERVER",
      `nats-server ${info.version} in cluster ${info.cluster} does not enforce expected last ` +
        `subject sequences at apply time; many states in one stream need a standalone server or a ` +
        `clustered server >= ${MIN_CLUSTERED_SHARED_VERSION} (use one stream per state instead)`,
      { details: { version: info.version, cluster: info.cluster } },
    );
  }
}
