#!/usr/bin/env bash
# e2e-otel.sh is `make e2e-otel`: the real binaries export to a real OpenTelemetry Collector
# (built with the official builder, ocb; scripts/tools.sh otelcol caches it in .tools/bin), and
# internal/e2eotel checks what the collector wrote. Once per OTLP protocol (E2E_OTEL_PROTOCOLS,
# default "grpc http/protobuf"):
#
#   collector (OTLP gRPC + HTTP on loopback, file exporter -> JSON lines)
#   private Postgres -> console-api migrate -> demo agent, console-api, connector
#   TestEngineTurn: tenant + agent (with an API key) via the console API, one turn via gRPC as
#                   the dialog engine, from its own traced client
#   stop the binaries (their last spans and metrics are flushed on exit)
#   TestCollectorOutput: the trace, resources, docs/operations.md's names, no secrets
#
# Everything listens on loopback: the demo agent on 127.0.0.2 (the only address the SSRF guard
# allows, as in make run), the rest on free ports of 127.0.0.1. Run files are in
# .tmp/e2e-otel.*/ (kept when a check fails, removed when all pass).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

PROTOCOLS=${E2E_OTEL_PROTOCOLS:-grpc http/protobuf}
DEMO_HOST=127.0.0.2

# say's bold is for a terminal: plain when stderr is a file or a pipe (make run >log 2>&1), and
# under NO_COLOR (no-color.org).
say() {
	if [[ -t 2 && -z ${NO_COLOR:-} ]]; then
		printf '\033[1m==> %s\033[0m\n' "$*" >&2
	else
		printf '==> %s\n' "$*" >&2
	fi
}
die() {
	printf 'e2e-otel: %s\n' "$*" >&2
	exit 1
}
# .ci/run calls us before anything else installed curl (dev.sh does, later).
if ! command -v curl >/dev/null; then
	[[ $(id -u) -eq 0 ]] || die "curl is needed: sudo apt-get install -y curl"
	say "installing curl (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq curl >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq curl >/dev/null; }
fi

scripts/tools.sh otelcol
otelcol="$(scripts/tools.sh bin)/otelcol-e2e"

mkdir -p .tmp bin
run=$(mktemp -d "$root/.tmp/e2e-otel.XXXXXX")
pgdir=$(mktemp -d "$(scripts/postgres.sh home)/e2e-otel.XXXXXX")
pids=()
ok=false
cleanup() {
	trap - EXIT INT TERM HUP
	stop_all
	scripts/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true
	rm -rf "$pgdir"
	if $ok; then
		rm -rf "$run"
	else
		echo "e2e-otel: run files kept in $run" >&2
	fi
}
# stop_all ends the children we started (SIGTERM: they drain and flush) and waits for them.
stop_all() {
	if ((${#pids[@]})); then
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	pids=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# free_port prints a port nothing listens on, below the kernel's range for outgoing
# connections' local ports and above the range postgres.sh picks from (as dev-smoke.sh does),
# and none of its arguments: ports drawn for programs not started yet, which nothing listens on.
free_port() {
	local low p
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	((low > 32000)) || low=60000
	while :; do
		p=$((31000 + RANDOM % (low - 31000)))
		[[ " $* " == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/$DEMO_HOST/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# wait_for NAME LOG CMD... retries CMD until it succeeds, for up to 2 min; a child that died
# meanwhile fails at once with the end of its log.
wait_for() {
	local name=$1 log=$2 pid
	shift 2
	for _ in $(seq 1 1200); do
		"$@" >/dev/null 2>&1 && return 0
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null || { tail -n 20 "$log" >&2; die "a process died while waiting for $name"; }
		done
		sleep 0.1
	done
	tail -n 20 "$log" >&2
	die "$name was not ready in 2 min (log: $log)"
}
tcp_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

say "building binaries"
CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/connector ./cmd/console-api ./examples/demo-agent
# Compile the checker once, so no step below waits for the compiler with the stack running.
go test -tags e2eotel -count=1 -run '^$' ./internal/e2eotel >/dev/null

say "starting private Postgres in $pgdir"
scripts/postgres.sh start "$pgdir" >&2

for proto in $PROTOCOLS; do
	tag=${proto%%/*}
	say "OTLP over $proto"
	out="$run/otel-$tag" logs="$run/logs-$tag"
	mkdir -p "$out" "$logs"
	scripts/postgres.sh createdb "$pgdir" "a2ac_$tag" >&2

	# The collector, on its own ports.
	export E2E_OUT=$out E2E_OTLP_GRPC_PORT E2E_OTLP_HTTP_PORT
	E2E_OTLP_GRPC_PORT=$(free_port)
	E2E_OTLP_HTTP_PORT=$(free_port "$E2E_OTLP_GRPC_PORT")
	"$otelcol" --config "$root/scripts/otelcol/config.yaml" >"$logs/collector.log" 2>&1 &
	collector=$!
	pids+=("$collector")
	wait_for collector "$logs/collector.log" tcp_open 127.0.0.1 "$E2E_OTLP_GRPC_PORT"
	wait_for collector "$logs/collector.log" tcp_open 127.0.0.1 "$E2E_OTLP_HTTP_PORT"
	otlp_port=$E2E_OTLP_GRPC_PORT
	[[ $proto == grpc ]] || otlp_port=$E2E_OTLP_HTTP_PORT

	console_port=$(free_port)
	grpc_port=$(free_port "$console_port")
	demo_port=$(free_port "$console_port" "$grpc_port")
	secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(
		# This subshell's children: the binaries, stopped before the check and on any failure
		# (the collector is the parent shell's).
		pids=()
		trap stop_all EXIT
		# The standard OTEL_* variables, as an operator sets them; short intervals so that the
		# check does not wait for the defaults (5 s spans, 60 s metrics).
		export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$otlp_port
		export OTEL_EXPORTER_OTLP_PROTOCOL=$proto
		export OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=e2e,e2e.protocol=$tag
		export OTEL_BSP_SCHEDULE_DELAY=200 OTEL_METRIC_EXPORT_INTERVAL=500
		export DATABASE_URL
		DATABASE_URL=$(scripts/postgres.sh url "$pgdir" "a2ac_$tag")
		export A2AC_SECRET_KEY A2AC_ADMIN_TOKEN="admin-$secret-token"
		A2AC_SECRET_KEY=$(head -c 32 /dev/urandom | base64 | tr -d '\n')
		export A2AC_CONSOLE_ADDR=127.0.0.1:$console_port A2AC_GRPC_ADDR=127.0.0.1:$grpc_port
		export A2AC_ALLOW_INSECURE_HTTP=true A2AC_ALLOWED_CIDRS=$DEMO_HOST/32 A2AC_DRAIN_DELAY=0s
		export E2E_API_KEY="apikey-$secret-only-the-agent" E2E_USER_MARKER="utterance-$secret"
		export E2E_USER_TEXT="repeat after me: my card pin is $E2E_USER_MARKER"
		export E2E_CONSOLE_URL=http://127.0.0.1:$console_port E2E_GRPC_ADDR=127.0.0.1:$grpc_port
		export E2E_CARD_URL=http://$DEMO_HOST:$demo_port/.well-known/agent.json
		export E2E_ADMIN_TOKEN=$A2AC_ADMIN_TOKEN E2E_STATE=$run/state-$tag E2E_LOGS=$logs

		bin/console-api migrate >"$logs/migrate.log" 2>&1 || { cat "$logs/migrate.log" >&2; exit 1; }
		# The agent's log may quote the user (it is the tenant's agent): not in $logs, which the
		# check searches.
		DEMO_AGENT_API_KEY=$E2E_API_KEY bin/demo-agent -addr "$DEMO_HOST:$demo_port" >"$run/demo-agent-$tag.log" 2>&1 &
		pids+=($!)
		bin/console-api serve >"$logs/console-api.log" 2>&1 &
		pids+=($!)
		bin/connector serve >"$logs/connector.log" 2>&1 &
		pids+=($!)
		wait_for "demo agent" "$run/demo-agent-$tag.log" curl -fs "$E2E_CARD_URL"
		wait_for console-api "$logs/console-api.log" curl -fs "$E2E_CONSOLE_URL/readyz"
		wait_for connector "$logs/connector.log" tcp_open 127.0.0.1 "$grpc_port"

		go test -tags e2eotel -count=1 -run '^TestEngineTurn$' -v ./internal/e2eotel >&2
		# The binaries flush their last spans and metrics when they stop; the collector keeps
		# running, and the check polls its files.
		stop_all
		go test -tags e2eotel -count=1 -run '^TestCollectorOutput$' -v ./internal/e2eotel >&2
	)
	kill -TERM "$collector"
	wait "$collector" || true
	pids=()
done
ok=true
say "e2e-otel: all checks passed ($PROTOCOLS)"
