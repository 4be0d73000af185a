#!/usr/bin/env bash
# Installs the packed packages the way a user would, outside this npm workspace, and checks that
# the READMEs' examples type-check and run. For each scratch app in install-test/ (one per zod
# line: 3.25's zod/v4, 4.0, the newest 4.x; see install-test/README.md) it copies the app into a
# temporary directory away from the repository (so nothing resolves to our node_modules), installs
# the tarballs and the app's locked third-party packages with `npm ci`, extracts the README
# examples, type-checks them (NodeNext, strict, skipLibCheck false) and the libraries' sources
# against the app's zod, runs the Node examples against a throwaway nats-server, and bundles the
# browser one with Vite where the app has Vite.
#   bash scripts/install-test.sh                  the test (npm registry only, cache first)
#   bash scripts/install-test.sh --update-locks   re-resolve and rewrite the apps' lockfiles
#   KEEP_INSTALL_TEST=1 bash scripts/install-test.sh   keeps the scratch apps (path in the log)
# Needs the packages built (npm run build) or buildable; `npm run pack` is run here.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
update_locks=false
if [ "${1:-}" = "--update-locks" ]; then update_locks=true; fi
npm_flags=(--prefer-offline --no-audit --no-fund --loglevel=error)

npm run --silent pack >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/statesync-install-test.XXXXXX")
[ -n "${KEEP_INSTALL_TEST:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir "$work/pack"
for name in core node browser playwright; do
  tarball=$(ls .pack/statesync-"$name"-*.tgz)
  cp "$tarball" "$work/pack/statesync-$name.tgz"
  tar -xzOf "$tarball" package/package.json >"$work/pack/statesync-$name.json"
done

# One scratch app: install, extract the examples, type-check, run, bundle. Prints as it goes.
test_app() {
  local dir=$1 name app subpath=()
  name=$(basename "$dir")
  app=$work/$name
  echo "==> install test: $name in $app ($(node -p "require('./$dir/package.json').description"))"
  mkdir "$app"
  cp "$dir/package.json" install-test/tsconfig.json install-test/index.html install-test/run-examples.mjs "$app/"
  if $update_locks; then
    (cd "$app" && npm install "${npm_flags[@]}")
    node install-test/lockfile.mjs strip "$app/package-lock.json"
    cp "$app/package-lock.json" "$dir/package-lock.json"
  else
    cp "$dir/package-lock.json" "$app/"
    node install-test/lockfile.mjs check "$app/package-lock.json" "$work/pack"
    (cd "$app" && npm ci "${npm_flags[@]}")
  fi
  if [ "$name" = "zod-3.25" ]; then subpath=(--zod-v4-subpath); fi
  node install-test/extract-examples.mjs "$root" "$app" "${subpath[@]}"
  cp install-test/entry-points.ts install-test/zod-behaviour.ts "$app/src/"
  (cd "$app" && ./node_modules/.bin/tsc -p tsconfig.json)
  echo "  ok tsc of the examples and entry points (strict, NodeNext, skipLibCheck false)"
  cp install-test/tsconfig.no-types.json install-test/no-node-types.ts "$app/"
  (cd "$app" && ./node_modules/.bin/tsc -p tsconfig.no-types.json)
  echo "  ok tsc of the packages' declarations without types (TypeScript 6+'s default)"
  # The libraries' own sources against this app's zod: every zod API they call must exist here.
  for pkg in core node browser; do
    mkdir -p "$app/statesync-src/$pkg"
    cp -r "packages/$pkg/src" "$app/statesync-src/$pkg/"
  done
  rm -r "$app/statesync-src/core/src/testing" # imports vitest; uses no zod
  cp install-test/tsconfig.sources.json install-test/sources-shims.d.ts "$app/"
  (cd "$app" && ./node_modules/.bin/tsc -p tsconfig.sources.json)
  echo "  ok tsc of packages/{core,node,browser}/src against this zod"
  (cd "$app" && node run-examples.mjs "$root/LICENSE")
  if [ -x "$app/node_modules/.bin/vite" ]; then
    (cd "$app" && ./node_modules/.bin/vite build --logLevel error --outDir web-dist)
    echo "  ok vite build of the browser example: $(du -sk "$app/web-dist" | cut -f1) KiB"
  fi
}

# The apps run side by side (installing is mostly waiting); their logs are printed in order.
pids=()
apps=(install-test/zod-*/)
for dir in "${apps[@]}"; do
  test_app "$dir" >"$work/$(basename "$dir").log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!apps[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; fi
  cat "$work/$(basename "${apps[$i]}").log"
done
if [ "$failed" != 0 ]; then
  echo "install test failed (KEEP_INSTALL_TEST=1 keeps the scratch apps)" >&2
  exit 1
fi
