#!/usr/bin/env bash
# stress.sh is `make stress`: it runs the Go tests N times against one private Postgres and
# reports, per test, in how many runs it failed — the flake hunt. Each run is what `make test`
# runs (go test -race -count=1 -p 2), recorded as go test -json in .tmp/stress/<time>/run-<i>.json
# and summed up by scripts/flakes. The exit status is 1 when any run failed.
#
#   scripts/stress.sh [N] [PACKAGES...] [-- GO TEST FLAGS...]
#   make stress N=5                                 the whole suite, 5 times
#   make stress N=20 PKGS=./internal/invoke/...     one package
#   scripts/stress.sh 10 ./internal/invoke/... -- -run TestTurnBehaviours
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# One cluster for all runs: started here unless the environment names one.
if [[ -z ${A2AC_TEST_DATABASE_URL:-} ]]; then
	exec scripts/with-postgres.sh "$0" "$@"
fi

n=${1:-5}
[[ $# -gt 0 ]] && shift
[[ $n =~ ^[1-9][0-9]*$ ]] || {
	echo "usage: $0 [N] [PACKAGES...] [-- GO TEST FLAGS...]  (N a positive count, got \"$n\")" >&2
	exit 2
}
pkgs=() flags=()
while [[ $# -gt 0 ]]; do
	if [[ $1 == -- ]]; then
		shift
		flags=("$@")
		break
	fi
	pkgs+=("$1")
	shift
done
[[ ${#pkgs[@]} -gt 0 ]] || pkgs=(./...)

dir="$root/.tmp/stress/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$dir"
go build -o "$dir/flakes" ./scripts/flakes
flakes=("$dir/flakes" -trim "$(go list -m)/")

echo "stress: $n runs of go test -race -count=1 -p 2 ${flags[*]} ${pkgs[*]} (output in ${dir#"$root"/}/)" >&2
worst=0
for i in $(seq 1 "$n"); do
	start=$SECONDS
	# -json output goes to the file, build errors and the like to run-<i>.stderr.
	if go test -race -count=1 -p 2 -timeout 10m -json "${flags[@]}" "${pkgs[@]}" >"$dir/run-$i.json" 2>"$dir/run-$i.stderr"; then
		rc=0
	else
		rc=$?
	fi
	line=$("${flakes[@]}" -line "$dir/run-$i.json" || true)
	if ((rc != 0)) && [[ $line == "no failures" ]]; then
		line="go test exited $rc, with no test verdict; see ${dir#"$root"/}/run-$i.stderr"
		worst=1
	fi
	printf 'stress: run %d/%d (%ds): %s\n' "$i" "$n" $((SECONDS - start)) "$line" >&2
done

echo >&2
runs=()
for i in $(seq 1 "$n"); do runs+=("$dir/run-$i.json"); done
"${flakes[@]}" "${runs[@]}" || worst=1
exit "$worst"
