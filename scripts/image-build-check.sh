#!/usr/bin/env bash
# image-build-check.sh checks the container image build without a container engine (none runs on
# the development and CI machines):
#
#   1. the Dockerfile's shape: a golang build stage whose Go version matches go.mod, a final
#      distroless static :nonroot stage running as 65532, no RUN in the final stage (there is no
#      shell there), both binaries copied to /usr/local/bin;
#   2. the build context: the files .dockerignore lets through are copied to a temp folder, so a
#      package outside the allowlist fails here rather than in the release pipeline;
#   3. the build stage's `go build` line, taken verbatim from the Dockerfile, is run in that
#      folder, and the binaries are checked: no ELF interpreter or dynamic section (readelf),
#      "statically linked" (file, when installed), CGO_ENABLED=0 and -trimpath (go version -m),
#      no symbol table or DWARF (-s -w, readelf -S), and that they start in an empty environment as
#      user 65532 and stop with the one-line config error.
#
#   scripts/image-build-check.sh        (also run by scripts/chart-test.sh)
#
# The .dockerignore reader understands the patterns that file uses: `*`, `!name`, `name/`, root
# globs such as `*.go`, and `**/glob`; the last matching line wins, and a pattern that matches a
# directory matches everything below it, as in Docker.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

fail() {
	printf 'image-build-check: FAIL: %s\n' "$*" >&2
	exit 1
}
ok() { printf 'image-build-check: ok   %s\n' "$*" >&2; }

dockerfile=Dockerfile
[[ -f $dockerfile ]] || fail "no Dockerfile at the repository root"
[[ -f .dockerignore ]] || fail "no .dockerignore at the repository root"

# --- 1. Dockerfile shape ---------------------------------------------------------------------
mapfile -t froms < <(grep -nE '^FROM[[:space:]]' "$dockerfile")
((${#froms[@]} == 2)) || fail "want exactly two stages (build, final), found ${#froms[@]}"
[[ ${froms[0]} =~ FROM[[:space:]]+golang:\$\{GO_VERSION\}[[:space:]]+AS[[:space:]]+build ]] ||
	fail "first stage must be 'FROM golang:\${GO_VERSION} AS build': ${froms[0]}"
go_arg="$(sed -nE 's/^ARG GO_VERSION=([0-9.]+)$/\1/p' "$dockerfile")"
go_mod="$(sed -nE 's/^go ([0-9]+\.[0-9]+)(\.[0-9]+)?$/\1/p' go.mod)"
[[ -n $go_arg && $go_arg == "$go_mod" ]] ||
	fail "Dockerfile GO_VERSION '${go_arg}' does not match go.mod's go ${go_mod}"
[[ ${froms[1]} =~ FROM[[:space:]]+gcr\.io/distroless/static-debian12:nonroot$ ]] ||
	fail "final stage must be gcr.io/distroless/static-debian12:nonroot: ${froms[1]}"
final_line="${froms[1]%%:*}"
final_stage="$(tail -n +"$final_line" "$dockerfile")"
if grep -qE '^RUN[[:space:]]' <<<"$final_stage"; then
	fail "RUN in the distroless final stage (it has no shell)"
fi
grep -qE '^USER 65532(:65532)?$' <<<"$final_stage" || fail "final stage must set USER 65532"
grep -qE '^COPY --from=build /out/connector /out/console-api /usr/local/bin/$' <<<"$final_stage" ||
	fail "final stage must copy both binaries to /usr/local/bin/"
ok "Dockerfile: golang:${go_arg} build stage, distroless static nonroot final stage, USER 65532, no RUN"

# --- 2. build context from .dockerignore ---------------------------------------------------------
mapfile -t rules < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' .dockerignore | grep -v '^$')

# comp_match PATTERN PATH: component-wise glob match (a `*` never crosses a `/`).
comp_match() {
	local -a pc xc
	IFS=/ read -r -a pc <<<"$1"
	IFS=/ read -r -a xc <<<"$2"
	((${#pc[@]} == ${#xc[@]})) || return 1
	local i
	for i in "${!pc[@]}"; do
		# shellcheck disable=SC2053 # the right side is a glob on purpose
		[[ ${xc[i]} == ${pc[i]} ]] || return 1
	done
}

# one_match PATTERN PATH: PATH itself matches PATTERN (`**/` may stand for any leading dirs).
one_match() {
	local pat=${1%/} path=$2
	if [[ $pat == '**/'* ]]; then
		local rest=${pat#'**/'} tail=$path
		while :; do
			comp_match "$rest" "$tail" && return 0
			[[ $tail == */* ]] || return 1
			tail=${tail#*/}
		done
	fi
	comp_match "$pat" "$path"
}

# matches PATTERN PATH: PATH or one of its parent directories matches PATTERN.
matches() {
	local prefix="" part
	local -a parts
	IFS=/ read -r -a parts <<<"$2"
	for part in "${parts[@]}"; do
		prefix=${prefix:+$prefix/}$part
		one_match "$1" "$prefix" && return 0
	done
	return 1
}

# included PATH: the last rule matching PATH decides; no match means included.
included() {
	local verdict=0 r
	for r in "${rules[@]}"; do
		if [[ $r == '!'* ]]; then
			matches "${r#!}" "$1" && verdict=0
		else
			matches "$r" "$1" && verdict=1
		fi
	done
	return $verdict
}

# Local state must never reach the builder; these are also skipped by the walk below.
for p in .git .tools .data .tmp bin deploy/helm/test/node_modules; do
	if included "$p/x"; then fail ".dockerignore lets $p/ into the build context"; fi
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/a2ac-image-check.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
ctx="$tmp/context"
mkdir -p "$ctx"
n=0
while IFS= read -r -d '' f; do
	f=${f#./}
	if included "$f"; then
		mkdir -p "$ctx/$(dirname "$f")"
		cp -p "$f" "$ctx/$f"
		n=$((n + 1))
	fi
done < <(find . \( -path ./.git -o -path ./.tools -o -path ./.data -o -path ./.tmp -o -path ./bin \
	-o -name node_modules \) -prune -o -type f -print0)
((n > 0)) || fail "the .dockerignore rules let no file into the build context"
for must in go.mod go.sum cmd/connector/main.go cmd/console-api/main.go; do
	[[ -f $ctx/$must ]] || fail "$must is not in the build context"
done
if [[ -n $(find "$ctx" -name '*_test.go') ]]; then fail "test files reach the build context"; fi
ok "build context: ${n} files let through by .dockerignore"

# --- 3. the build stage's go build, verbatim ---------------------------------------------------
build_line="$(grep -E '^RUN .*go build ' "$dockerfile")" || fail "no 'RUN ... go build' line in the Dockerfile"
(($(wc -l <<<"$build_line") == 1)) || fail "more than one 'go build' line in the Dockerfile"
cmd="${build_line#RUN }"
while [[ $cmd == --* ]]; do cmd="${cmd#* }"; done # drop --mount=... options
[[ $cmd == *' -o /out/ '* ]] || fail "the go build line must write to /out/: $cmd"
out="$tmp/out"
mkdir -p "$out"
chmod 0755 "$tmp" "$out" # uid 65532 runs the binaries below
cmd="${cmd/ -o \/out\/ / -o $out\/ }"
version="image-check-$(git rev-parse --short HEAD 2>/dev/null || echo local)"
printf 'image-build-check: running in the build context: %s\n' "$cmd" >&2
# As in the golang image: no GOFLAGS, no workspace, the module's own go.mod.
(cd "$ctx" && env GOFLAGS= GOWORK=off VERSION="$version" bash -c "$cmd") || fail "go build failed in the build context"

for bin in connector console-api; do
	b="$out/$bin"
	[[ -x $b ]] || fail "$bin was not built"
	# Each tool's output is read whole before it is matched: under pipefail, `tool | grep -q`
	# fails (or, negated, passes) when grep exits on a match while the tool still writes.
	segments=$(readelf -lW "$b") sections=$(readelf -SW "$b") dynamic=$(readelf -dW "$b")
	if grep -q 'INTERP' <<<"$segments"; then fail "$bin has an ELF interpreter (dynamically linked)"; fi
	grep -q 'There is no dynamic section' <<<"$dynamic" || fail "$bin has a dynamic section"
	if grep -qE '\.symtab|\.debug_' <<<"$sections"; then fail "$bin keeps its symbol table or DWARF (-s -w missing)"; fi
	if command -v file >/dev/null; then
		grep -q 'statically linked' <<<"$(file -b "$b")" || fail "$bin: file says: $(file -b "$b")"
	fi
	info="$(go version -m "$b")"
	grep -qE '^[[:space:]]+build[[:space:]]+CGO_ENABLED=0$' <<<"$info" || fail "$bin not built with CGO_ENABLED=0"
	grep -qE '^[[:space:]]+build[[:space:]]+-trimpath=true$' <<<"$info" || fail "$bin not built with -trimpath"
	# -ldflags is not in the build info under -trimpath (it may hold paths); -s -w is checked
	# through the sections above, and -X of a variable the binary lacks is a no-op.
	if grep -qF "$root" <<<"$info"; then fail "$bin embeds the build path"; fi
	# Starts with no environment at all, as the unprivileged image user when we may switch to it;
	# stops on the missing config with its one-line message.
	sub=serve
	[[ $bin == console-api ]] && sub=migrate
	as_user=()
	if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
		as_user=(setpriv --reuid 65532 --regid 65532 --clear-groups)
	fi
	set +e
	msg="$("${as_user[@]}" env -i "$b" "$sub" 2>&1)"
	rc=$?
	set -e
	[[ $rc == 1 && $msg == *DATABASE_URL* ]] || fail "$bin as uid 65532 with an empty environment: exit $rc: $msg"
	ok "$bin: static ELF, stripped, CGO_ENABLED=0, -trimpath, runs ${as_user:+as 65532 }in an empty env ($(du -h "$b" | cut -f1))"
done
