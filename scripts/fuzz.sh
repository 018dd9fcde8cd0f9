#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module, one after the other, for a given time each.
#   scripts/fuzz.sh [DURATION]   default 60s per target
# New crashers land in the package's testdata/fuzz/ and become regular test cases.
# The fuzz targets of cmd/console-api and cmd/connector drive the live servers, with Postgres
# behind them: the run gets a private cluster (scripts/with-postgres.sh) unless one is given.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ -z ${A2AC_TEST_DATABASE_URL:-} ]]; then
	exec scripts/with-postgres.sh "$0" "$@"
fi
fuzztime=${1:-60s}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "== $pkg $target ($fuzztime)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
	done
done
