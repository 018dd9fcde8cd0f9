#!/usr/bin/env bash
# with-postgres.sh runs a command with A2AC_TEST_DATABASE_URL pointing at a Postgres cluster:
# the one already given in the environment, or a private one started in a new folder in this
# checkout's cluster home (`scripts/postgres.sh home`, in the system temp directory) and stopped
# and removed when the command ends. Test packages create and drop their own database in it
# (internal/pgtest).
#   scripts/with-postgres.sh go test ./internal/store/...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n ${A2AC_TEST_DATABASE_URL:-} ]]; then
	exec "$@"
fi
home=$("$root/scripts/postgres.sh" home)
pgdir=$(mktemp -d "$home/test.XXXXXX")
cleanup() {
	trap - EXIT INT TERM HUP
	"$root/scripts/postgres.sh" stop "$pgdir" >/dev/null 2>&1 || true
	rm -rf "$pgdir"
}
trap cleanup EXIT
# A signal ends the command (which has it too when it came from the terminal), then the cluster.
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP
printf '\n== private postgres in %s\n' "$pgdir" >&2
"$root/scripts/postgres.sh" start "$pgdir" >&2
A2AC_TEST_DATABASE_URL=$("$root/scripts/postgres.sh" url "$pgdir")
export A2AC_TEST_DATABASE_URL
"$@"
