#!/usr/bin/env bash
# dev.sh is `make run`: the whole stack on this machine, with the demo agent registered for a
# demo tenant, and the one command to chat with it.
#
#   private Postgres (.data/pg)  ->  console-api migrate  ->  demo agent, console API, connector
#
# State lives in .data/ (cluster, secrets, demo ids), so a second `make run` reuses it.
# Ports: CONSOLE_PORT (8080), GRPC_PORT (9090), DEMO_PORT (9999). Ctrl-C stops everything.
#
# The demo agent listens on its own loopback address, DEMO_HOST (127.0.0.2), and the SSRF guard
# allows exactly that address: the console and the connector still refuse 127.0.0.1 (where
# Postgres and they themselves listen), 10.x, metadata addresses and the rest, as in production.
# To try an agent of your own on this machine, add its address: DEV_ALLOWED_CIDRS=127.0.0.2/32,127.0.0.1/32.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

CONSOLE_PORT=${CONSOLE_PORT:-8080}
GRPC_PORT=${GRPC_PORT:-9090}
DEMO_PORT=${DEMO_PORT:-9999}
DEMO_HOST=${DEMO_HOST:-127.0.0.2}
data="${A2AC_DEV_DATA:-$root/.data}" # A2AC_DEV_DATA: another state folder (the smoke test uses a temp one)
mkdir -p "$data" "$root/bin"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'dev: %s\n' "$*" >&2; exit 1; }

if ! command -v curl >/dev/null; then
	if [[ $(id -u) -eq 0 ]]; then
		say "installing curl (apt-get)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null 2>&1 ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null; }
	else
		die "curl is needed: sudo apt-get install -y curl"
	fi
fi

for hostport in "127.0.0.1:$CONSOLE_PORT" "127.0.0.1:$GRPC_PORT" "$DEMO_HOST:$DEMO_PORT"; do
	port=${hostport##*:}
	if (exec 3<>"/dev/tcp/${hostport%:*}/$port") 2>/dev/null; then
		die "port $port is in use; set CONSOLE_PORT/GRPC_PORT/DEMO_PORT to free ports"
	fi
done

pids=()
cleanup() {
	trap - EXIT INT TERM
	say "stopping"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -z ${DATABASE_URL_FROM_ENV:-} ]]; then scripts/postgres.sh stop "$data/pg" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT INT TERM

say "building binaries"
CGO_ENABLED=0 go build -o bin/ ./cmd/connector ./cmd/console-api ./examples/demo-agent

if [[ -n ${DATABASE_URL:-} ]]; then
	DATABASE_URL_FROM_ENV=1
	say "using DATABASE_URL from the environment"
else
	say "starting private Postgres in $data/pg"
	scripts/postgres.sh start "$data/pg" >&2
	scripts/postgres.sh createdb "$data/pg" a2ac >&2
	DATABASE_URL=$(scripts/postgres.sh url "$data/pg" a2ac)
fi
export DATABASE_URL

# Secrets are generated once and kept, so stored API keys stay readable across runs.
if [[ ! -f $data/dev.env ]]; then
	{
		echo "A2AC_SECRET_KEY=$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
		echo "A2AC_ADMIN_TOKEN=admin-$(head -c 18 /dev/urandom | base64 | tr -d '\n/+=')"
	} >"$data/dev.env"
	chmod 600 "$data/dev.env"
fi
set -a
# shellcheck disable=SC1091
. "$data/dev.env"
A2AC_CONSOLE_ADDR=127.0.0.1:$CONSOLE_PORT
A2AC_GRPC_ADDR=127.0.0.1:$GRPC_PORT
A2AC_ALLOW_INSECURE_HTTP=true # the demo agent serves plain HTTP on loopback
A2AC_ALLOWED_CIDRS=${DEV_ALLOWED_CIDRS:-$DEMO_HOST/32} # only the demo agent; see the header
set +a

say "applying migrations"
bin/console-api migrate

mkdir -p "$data/logs"
say "starting demo agent, console API and connector (logs in $data/logs/)"
bin/demo-agent -addr "$DEMO_HOST:$DEMO_PORT" >"$data/logs/demo-agent.log" 2>&1 &
pids+=($!)
bin/console-api serve >"$data/logs/console-api.log" 2>&1 &
pids+=($!)
bin/connector serve >"$data/logs/connector.log" 2>&1 &
pids+=($!)

API=http://127.0.0.1:$CONSOLE_PORT
for _ in $(seq 1 100); do
	if curl -fs "$API/readyz" >/dev/null 2>&1 && curl -fs "http://$DEMO_HOST:$DEMO_PORT/.well-known/agent.json" >/dev/null 2>&1; then
		break
	fi
	sleep 0.1
done
curl -fs "$API/readyz" >/dev/null || die "console API did not become ready; see $data/logs/console-api.log"

# jsonfield NAME reads the first string value of NAME from the JSON on stdin (our own output).
jsonfield() { grep -o "\"$1\":\"[^\"]*\"" | head -n1 | cut -d'"' -f4; }

# The demo tenant and agent are created once and remembered in .data/demo.env.
if [[ -f $data/demo.env ]]; then
	# shellcheck disable=SC1091
	. "$data/demo.env"
fi
if [[ -z ${DEMO_TOKEN:-} ]] || ! curl -fs "$API/v1/agents" -H "Authorization: Bearer $DEMO_TOKEN" >/dev/null; then
	resp=$(curl -fsS -X POST "$API/v1/tenants" -H "Authorization: Bearer $A2AC_ADMIN_TOKEN" -d '{"name":"Demo tenant"}')
	DEMO_TENANT=$(jsonfield id <<<"$resp")
	DEMO_TOKEN=$(jsonfield token <<<"$resp")
	DEMO_AGENT=
fi
CARD_URL="http://$DEMO_HOST:$DEMO_PORT/.well-known/agent.json"
if [[ -z ${DEMO_AGENT:-} ]] || ! curl -fs "$API/v1/agents/$DEMO_AGENT" -H "Authorization: Bearer $DEMO_TOKEN" >/dev/null; then
	resp=$(curl -sS -X POST "$API/v1/agents" -H "Authorization: Bearer $DEMO_TOKEN" -d "{\"cardUrl\":\"$CARD_URL\"}")
	DEMO_AGENT=$(jsonfield id <<<"$resp")
	[[ -n $DEMO_AGENT ]] || die "registering the demo agent failed: $resp"
fi
printf 'DEMO_TENANT=%s\nDEMO_TOKEN=%s\nDEMO_AGENT=%s\n' "$DEMO_TENANT" "$DEMO_TOKEN" "$DEMO_AGENT" >"$data/demo.env"

cat <<MSG

  a2a-connector is up.

    web console   $API/           (paste the demo tenant's token: $DEMO_TOKEN)
    console API   $API            (OpenAPI: $API/openapi.json)
    connector     127.0.0.1:$GRPC_PORT (gRPC; grpcurl -plaintext 127.0.0.1:$GRPC_PORT list)
    demo agent    http://$DEMO_HOST:$DEMO_PORT  ("超级AI助理", registered for the demo tenant)

  Chat with the demo agent (in another terminal):

    bin/connector chat -addr 127.0.0.1:$GRPC_PORT -tenant $DEMO_TENANT -agent $DEMO_AGENT

  Try: "重复我说的话：今天天气很好", "如何打好篮球" (slow stream), "帮我算加法" then "3和5",
       "进行闪光", "数一下我说了几句话", "tell me a joke" (handed back). English works too:
       "repeat after me: hello", "add please" then "3 and 5", "coach me at basketball".

  Console API as the operator and as the demo tenant:

    export ADMIN=$A2AC_ADMIN_TOKEN TOKEN=$DEMO_TOKEN
    curl -s $API/v1/agents -H "Authorization: Bearer \$TOKEN"
    curl -s -X POST $API/v1/agents/validate -H "Authorization: Bearer \$TOKEN" -d '{"cardUrl":"$CARD_URL"}'
    curl -s -X POST $API/v1/agents/$DEMO_AGENT/test -H "Authorization: Bearer \$TOKEN" -d '{"text":"1与2相加是多少"}'

  Register the platform guide's sample card again under a new tenant (ready to paste):

    TOKEN2=\$(curl -s -X POST $API/v1/tenants -H "Authorization: Bearer $A2AC_ADMIN_TOKEN" -d '{"name":"Me"}' | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
    curl -s -X POST $API/v1/agents -H "Authorization: Bearer \$TOKEN2" -d '{"cardUrl":"$CARD_URL"}'

  The SSRF guard is on: only the demo agent's address ($DEMO_HOST) and plain HTTP are allowed
  here. A hostile URL gets a clear 502 (reason blocked_address), e.g.:

    curl -s -X POST $API/v1/agents/validate -H "Authorization: Bearer \$TOKEN" -d '{"cardUrl":"http://127.0.0.1:$CONSOLE_PORT/openapi.json"}'

  Ctrl-C stops everything (Postgres data stays in .data/; make clean removes it).
MSG

wait -n "${pids[@]}" || true
die "a process exited; see $data/logs/"
