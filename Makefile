# a2a-connector — the two commands a newcomer needs are `make run` and `make test`.
.PHONY: help run test stress bench loadtest fuzz proto build lint clean clean-k8s screenshots e2e-failover e2e-otel e2e-k8s

## run: private Postgres + migrations + console API (+ connector and demo agent), prints how to use it
run:
	scripts/dev.sh

## test: everything — gofmt, vet, staticcheck, dupl, generated code, all tests against real Postgres
test:
	scripts/test.sh

## stress: the Go tests N times (default 5) against one private Postgres; a table of the tests that failed
N ?= 5
PKGS ?= ./...
stress:
	scripts/stress.sh $(N) $(PKGS)

## bench: benchmarks of the hot path, printed as tables
bench:
	scripts/bench.sh

## loadtest: the connector measured from outside against a bare A2A client, one table (LOADTEST_FLAGS: loadgen flags)
loadtest:
	scripts/loadtest.sh $(LOADTEST_FLAGS)

## e2e-failover: the connector across a real Postgres failover (etcd + two nodes under Patroni, ~2 min; not in make test)
e2e-failover:
	scripts/e2e-failover.sh $(FAILOVER_FLAGS)

## e2e-otel: the binaries' traces and metrics in a real OpenTelemetry Collector, over OTLP gRPC and HTTP (~15 s warm; its first build ~1-3 min)
e2e-otel:
	scripts/e2e-otel.sh

## e2e-k8s: the chart on a real cluster built from source: install/upgrade/rollback/uninstall (kwok), then a real node (containerd) with Postgres, turns, a rollout under load and traces (root; ~1.5 min warm, 15-30 min for the first build)
e2e-k8s:
	scripts/e2e-k8s.sh

## fuzz: run each fuzz target for FUZZTIME (default 60s)
FUZZTIME ?= 60s
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

## proto: regenerate api/proto/**/*.pb.go with the pinned generators
proto:
	scripts/proto.sh

## lint: the static checks of make test without the tests — vet, staticcheck, dupl
lint:
	go vet ./...
	scripts/tools.sh lint >/dev/null
	"$$(scripts/tools.sh bin)/staticcheck" ./...
	scripts/lint-dupl.sh

## screenshots: the web console's browser tests (real Chromium, a CJK font for the demo agent) write docs/screenshots/*.png
screenshots:
	A2AC_WEB_SCREENSHOTS=$(CURDIR)/docs/screenshots scripts/test.sh ./internal/console/ -run 'InBrowser' -count=1

## build: static binaries into bin/
build:
	CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/... ./examples/...

## clean: remove local data (incl. this checkout's Postgres clusters in the temp dir), binaries, the pinned tools in .tools/ and the tests' node_modules; keeps e2e-k8s's cluster build (.tools/k8s, 15-30 min to rebuild: make clean-k8s)
clean:
	scripts/postgres.sh clean
	rm -rf bin .tmp .data
	[ ! -d .tools ] || find .tools -mindepth 1 -maxdepth 1 ! -name k8s -exec rm -rf {} +
	find . \( -path ./.git -o -path ./.tools \) -prune -o -type d -name node_modules -prune -exec rm -rf {} +

## clean-k8s: remove the cluster make e2e-k8s builds from source (.tools/k8s)
clean-k8s:
	rm -rf .tools/k8s
	[ ! -d .tools ] || rmdir --ignore-fail-on-non-empty .tools

## help: these lines
help:
	@sed -n 's/^## //p' $(firstword $(MAKEFILE_LIST))
