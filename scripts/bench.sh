#!/usr/bin/env bash
# bench.sh is `make bench`: the hot-path benchmarks, printed as a table (benchstat when
# available). Numbers come from here, never from timed assertions in tests.
#   scripts/bench.sh [COUNT]   runs each benchmark COUNT times (default 5)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
count=${1:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pkgs=$(grep -l '^func Benchmark' $(git ls-files '*_test.go') | xargs -n1 dirname | sort -u | sed 's|^|./|')
echo "== go test -bench . -benchmem -count $count $pkgs" >&2
scripts/with-postgres.sh go test -run '^$' -bench . -benchmem -count "$count" $pkgs | tee "$out" >&2
scripts/tools.sh benchstat >/dev/null 2>&1 || true
if [[ -x "$(scripts/tools.sh bin)/benchstat" ]]; then
	echo
	"$(scripts/tools.sh bin)/benchstat" "$out"
fi
