#!/usr/bin/env bash
# test.sh runs every check of the project: formatting, vet, staticcheck (unused code included),
# copied code (scripts/lint-dupl.sh), generated-code freshness, and all Go tests (unit, fuzz
# seeds, end-to-end against a real Postgres and real A2A agents on loopback), with the race
# detector.
#
# Postgres: scripts/with-postgres.sh; when A2AC_TEST_DATABASE_URL is unset, a private cluster is
# started in this checkout's folder in the system temp directory (scripts/postgres.sh home) and
# removed on exit; each test package creates and drops its own database in it.
#
#   scripts/test.sh              everything (what `make test` and .ci/run call)
#   scripts/test.sh ./internal/store/...   only these packages (still with Postgres)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

step() { printf '\n== %s\n' "$*" >&2; }

pkgs=("$@")
if [[ ${#pkgs[@]} -eq 0 ]]; then
	pkgs=(./...)
	step "gofmt"
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*'))
	if [[ -n $unformatted ]]; then
		echo "gofmt would change:" >&2
		echo "$unformatted" >&2
		exit 1
	fi

	step "go mod verify / tidy check"
	go mod verify >/dev/null
	cp go.mod .tmp-go.mod.bak && cp go.sum .tmp-go.sum.bak
	go mod tidy
	if ! diff -q go.mod .tmp-go.mod.bak >/dev/null || ! diff -q go.sum .tmp-go.sum.bak >/dev/null; then
		mv .tmp-go.mod.bak go.mod && mv .tmp-go.sum.bak go.sum
		echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit" >&2
		exit 1
	fi
	rm -f .tmp-go.mod.bak .tmp-go.sum.bak

	step "go vet"
	go vet ./...

	# Code behind a build tag (the e2e-otel and e2e-k8s stages) is compiled by no other step:
	# vet it with every tag the module's files use, found anew each run, so a refactor cannot
	# break tagged code silently. GOOS/GOARCH names, race and unix are not custom tags.
	tags=$(git ls-files -- '*.go' | xargs grep -h '^//go:build' | grep -oE '[A-Za-z0-9_]+' |
		grep -vxE 'go|build|race|unix|linux|darwin|windows|freebsd|amd64|arm64|cgo' | sort -u | paste -sd, -)
	if [[ -n $tags ]]; then
		step "go vet -tags $tags"
		go vet -tags "$tags" ./...
	fi

	step "staticcheck (its default checks, U1000 unused code among them)"
	scripts/tools.sh lint >/dev/null
	"$(scripts/tools.sh bin)/staticcheck" ./...

	step "dupl: no copied code"
	scripts/lint-dupl.sh

	step "generated code is fresh"
	scripts/proto.sh check

	step "container build stage, Helm chart (lint, template, offline schema validation)"
	scripts/chart-test.sh

	step "make run: the whole stack comes up and the printed commands work"
	scripts/dev-smoke.sh
fi

step "go test -race ${pkgs[*]}"
# -p 2 on these 2-core machines; packages run in parallel, each with its own database.
exec scripts/with-postgres.sh go test -race -count=1 -p 2 -timeout 20m "${pkgs[@]}"
