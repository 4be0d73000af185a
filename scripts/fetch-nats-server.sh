#!/usr/bin/env bash
# Fetches Debian trixie's nats-server (2.10.x, the newest server these machines can get) into
# .servers/trixie/ (git-ignored) for the test matrix, without touching the system: apt runs with a
# configuration of its own (sources list, lists, cache and preferences in .servers/apt/), downloads
# the package and `dpkg -x` unpacks it; nothing is installed, the system's nats-server (bookworm's
# 2.9.10) stays as it is. Does nothing when the binary is already there. Prints the binary's path
# on stdout as its last line. The demo does not need this server; only scripts/test.sh calls it.
# Override the mirror with DEBIAN_MIRROR (default: the host bookworm uses in /etc/apt/sources.list*).
set -euo pipefail
cd "$(dirname "$0")/.."

root="$PWD/.servers"
dest="$root/trixie"
bin="$dest/usr/sbin/nats-server"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
  echo "fetch-nats-server: apt-get and dpkg are needed to fetch trixie's nats-server" >&2
  exit 1
fi

# The mirror bookworm uses here, from a deb822 `URIs:` line or a one-line `deb` entry.
mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
      grep -v '^\s*#' |
      grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n 1 | tr -d ' ' || true
  )"
  mirror="${mirror:-http://deb.debian.org/debian}"
fi
mirror="${mirror%/}"

apt_dir="$root/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/empty"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
  >"$apt_dir/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=$apt_dir/empty"
  -o "Dir::Etc::Preferences=/dev/null"
  -o "Dir::Etc::PreferencesParts=$apt_dir/empty"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
  -o "Dir::Cache::Archives=$apt_dir/cache/archives"
)
# As root apt downloads as the `_apt` user, which may not write into the project: stay root.
if [ "$(id -u)" = "0" ]; then apt_opts+=(-o "APT::Sandbox::User=root"); fi

echo "==> fetching nats-server from Debian trixie ($mirror) into .servers/ (system untouched)" >&2
apt-get "${apt_opts[@]}" -qq update >&2
work="$(mktemp -d "$root/download.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get "${apt_opts[@]}" -qq download nats-server >&2)
deb="$(ls "$work"/nats-server_*.deb)"
rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
dpkg -x "$deb" "$dest.tmp"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
rm -rf "$apt_dir"
"$bin" --version >&2
echo "$bin"
