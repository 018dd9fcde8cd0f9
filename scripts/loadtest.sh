#!/usr/bin/env bash
# loadtest.sh is `make loadtest`: the connector measured from outside, against a bare A2A client,
# in one run (cmd/loadgen). It builds the binaries, starts a private Postgres cluster in a fresh
# folder under the system temp directory (the `postgres` user must be able to enter every parent
# of it, which a checkout under a closed home folder does not allow), runs loadgen, and removes
# the cluster when it ends.
#
#   scripts/loadtest.sh                      the default run (a few minutes)
#   scripts/loadtest.sh -markdown -c 1,10    any loadgen flags (bin/loadgen -h lists them)
#   make loadtest LOADTEST_FLAGS='-long-streams 0'
#
# With DATABASE_URL set, that database is used instead of a private cluster (it should be a
# fresh one: the first figure is the rate on a fresh database).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

say "building connector, console-api, loadgen"
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./cmd/connector ./cmd/console-api ./cmd/loadgen

# 10,000 concurrent streams need more than the usual 1,024 open files in every process; loadgen
# raises its own soft limit to the hard one and its children inherit it.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

pgdir=
cleanup() {
	trap - EXIT INT TERM
	if [[ -n $pgdir ]]; then
		scripts/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true
		rm -rf "$pgdir"
	fi
}
trap cleanup EXIT
# Ctrl-C reaches loadgen too (same foreground process group), which stops its programs; the
# shell waits for it, then the EXIT trap stops the cluster. (A no-op trap, not '': an ignored
# signal would stay ignored in loadgen.)
trap ':' INT TERM

if [[ -z ${DATABASE_URL:-} ]]; then
	pgdir=$(mktemp -d "${TMPDIR:-/tmp}/a2ac-loadtest.XXXXXX")
	chmod 755 "$pgdir"
	say "private Postgres in $pgdir"
	scripts/postgres.sh start "$pgdir" >&2
	scripts/postgres.sh createdb "$pgdir" loadgen >&2
	DATABASE_URL=$(scripts/postgres.sh url "$pgdir" loadgen)
fi

say "bin/loadgen $*"
# Not exec: the trap above must stop the cluster after loadgen has stopped its programs.
bin/loadgen -bin bin -database-url "$DATABASE_URL" "$@"
