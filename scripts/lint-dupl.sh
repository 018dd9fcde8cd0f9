#!/usr/bin/env bash
# lint-dupl.sh fails when Go code is copied: two token sequences of at least DUPL_THRESHOLD
# tokens (default 100, dupl's own) that are the same but for names and values, in any two .go
# files git tracks (tests included; generated *.pb.go left out). It is part of scripts/test.sh.
#
# A finding is fixed by giving the logic one home (a function, a table, a generic helper), not by
# raising the threshold. The tool comes pinned from scripts/tools.sh (group lint).
#
#   scripts/lint-dupl.sh            check, print the clones, exit 1 when there are any
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

threshold="${DUPL_THRESHOLD:-100}"
scripts/tools.sh lint >/dev/null
dupl="$(scripts/tools.sh bin)/dupl"

files=$(git ls-files '*.go' | grep -v '\.pb\.go$')
out=$(printf '%s\n' "$files" | "$dupl" -files -plumbing -t "$threshold")
if [[ -n $out ]]; then
	echo "copied code (dupl -t $threshold): give it one home" >&2
	echo "$out" >&2
	exit 1
fi
