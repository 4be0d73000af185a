/* global process, console */
// Keeps a scratch app's committed package-lock.json usable across rebuilds of the tarballs.
// The lockfile pins every third-party package; the @statesync/* entries point at the tarballs
// (file:../pack/statesync-NAME.tgz) without an integrity hash, since their bytes change with
// every build. `npm ci` accepts that as long as what a tarball declares still matches its entry.
//   node lockfile.mjs strip LOCKFILE        drop the tarballs' integrity (after `npm install`)
//   node lockfile.mjs check LOCKFILE PACK   fail when a tarball's version, dependencies or peer
//                                           dependencies differ from its lockfile entry
//                                           (PACK/statesync-NAME.json: the tarball's package.json)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [command, lockPath, packDir] = process.argv.slice(2);
const lock = JSON.parse(readFileSync(lockPath, "utf8"));
const entries = Object.entries(lock.packages).filter(([path]) =>
  path.startsWith("node_modules/@statesync/"),
);
if (entries.length === 0) throw new Error(`${lockPath} has no @statesync/* entries`);

if (command === "strip") {
  for (const [, entry] of entries) delete entry.integrity;
  writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
} else if (command === "check") {
  const same = (a = {}, b = {}) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
  const sorted = (o) =>
    Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  const stale = [];
  for (const [path, entry] of entries) {
    const name = path.slice("node_modules/@statesync/".length);
    const manifest = JSON.parse(readFileSync(join(packDir, `statesync-${name}.json`), "utf8"));
    if (
      manifest.version !== entry.version ||
      !same(manifest.dependencies, entry.dependencies) ||
      !same(manifest.peerDependencies, entry.peerDependencies)
    ) {
      stale.push(`@statesync/${name}`);
    }
  }
  if (stale.length > 0) {
    console.error(
      `${lockPath}: ${stale.join(", ")} declare other versions or dependencies than the lockfile; ` +
        "refresh the scratch apps' lockfiles with: bash scripts/install-test.sh --update-locks",
    );
    process.exit(1);
  }
} else {
  throw new Error("usage: lockfile.mjs strip LOCKFILE | check LOCKFILE PACK_DIR");
}
