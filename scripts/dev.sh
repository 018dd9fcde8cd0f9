#!/usr/bin/env bash
# dev.sh is `make run`: the whole stack on this machine, with the demo agent registered for a
# demo tenant, and the one command to chat with it.
#
#   private Postgres  ->  console-api migrate  ->  demo agent, console API, connector
#
# State is kept, so a second `make run` finds the agents registered by the first: secrets, demo
# ids and logs in .data/ (A2AC_DEV_DATA overrides), the Postgres cluster in this checkout's
# cluster home in the system temp directory (`scripts/postgres.sh home`; A2AC_DEV_PG overrides):
# not in the checkout, which may sit where user postgres cannot go (a mode-700 folder, /root).
# `make clean` removes both. DATABASE_URL set in the environment replaces the private cluster.
# Ports: CONSOLE_PORT (8080), GRPC_PORT (9090), DEMO_PORT (9999).
#
# Ctrl-C (or SIGTERM, SIGHUP, or the reader of our output going away) stops every child and
# Postgres, prints one goodbye line and exits 0. A child that dies on its own stops the rest too,
# and the exit is 1 with its name and the end of its log.
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
data="${A2AC_DEV_DATA:-$root/.data}"
mkdir -p "$data" "$root/bin"

# say's bold is for a terminal: plain when stderr is a file or a pipe (make run >log 2>&1), and
# under NO_COLOR (no-color.org).
say() {
	if [[ -t 2 && -z ${NO_COLOR:-} ]]; then
		printf '\033[1m==> %s\033[0m\n' "$*" >&2
	else
		printf '==> %s\n' "$*" >&2
	fi
}
die() { printf 'dev: %s\n' "$*" >&2; exit 1; }

if ! command -v curl >/dev/null; then
	if [[ $(id -u) -eq 0 ]]; then
		say "installing curl (apt-get)"
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq curl >/dev/null 2>&1 ||
			{ apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq curl >/dev/null; }
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

pids=()  # children, in the order of names
names=() # their names, which are also their log files' names
pgdir=   # the private cluster's folder, once we start one

# finish is every way out: it stops the children and the private Postgres, says msg (when not
# empty) and exits with code. It runs to the end whatever happens meanwhile: a terminal or a
# reader of our output that went away (SIGPIPE; writes then fail with EPIPE and are ignored), or
# a second Ctrl-C, which kills the children that are still shutting down.
finish() {
	local code=$1 msg=$2
	trap '' PIPE
	trap - EXIT
	trap 'kill -KILL "${pids[@]}" 2>/dev/null || true' INT TERM HUP
	if ((${#pids[@]})); then
		kill -TERM "${pids[@]}" 2>/dev/null || true
	fi
	until wait 2>/dev/null; do :; done # a trapped signal ends a wait early; wait again
	if [[ -n $pgdir ]]; then
		scripts/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true
	fi
	if [[ -n $msg ]]; then
		printf '%s\n' "$msg" >&2 2>/dev/null || true
	fi
	exit "$code"
}
goodbye() {
	local where=".data/"
	[[ $data == "$root/.data" ]] || where=$data
	[[ -z $pgdir ]] || where+=" and $pgdir"
	echo "dev: stopped everything$1; state kept in $where (make clean removes it). Bye."
}
trap 'finish 0 "$(goodbye "")"' INT TERM HUP
trap 'finish 0 "$(goodbye " (our output was closed)")"' PIPE
trap 'finish $? ""' EXIT # set -e or die: the message is already out

# start NAME CMD... runs a child in the background with its output in $data/logs/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$data/logs/$name.log" 2>&1 &
	pids+=($!)
	names+=("$name")
}

# exited sets gone and gone_pid to the name and pid of the first child that is no longer
# running; false if none.
gone= gone_pid=
exited() {
	local i
	for i in "${!pids[@]}"; do
		if ! kill -0 "${pids[$i]}" 2>/dev/null; then
			gone=${names[$i]} gone_pid=${pids[$i]}
			return 0
		fi
	done
	return 1
}

# ended stops everything because child $1 ended with exit status $2. Status 0 is a child that
# was told to stop (our binaries exit 0 after a graceful shutdown on SIGINT or SIGTERM, e.g. when
# Ctrl-C reached them but not us, because we were started with SIGINT ignored): a goodbye and 0.
# Anything else is a crash: its name, the end of its log, and 1.
ended() {
	if (($2 == 0)); then
		finish 0 "$(goodbye " ($1 was stopped)")"
	fi
	local log="$data/logs/$1.log"
	{
		echo "dev: $1 exited on its own (status $2); the last lines of $log:"
		tail -n 15 "$log" | sed 's/^/    /'
	} >&2 2>/dev/null || true
	finish 1 "dev: stopped everything because $1 exited; see $log"
}

say "building binaries"
# -trimpath: the build cache does not depend on where the checkout is, so a second clone reuses it.
CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/connector ./cmd/console-api ./examples/demo-agent

if [[ -n ${DATABASE_URL:-} ]]; then
	say "using DATABASE_URL from the environment"
else
	if [[ -n ${A2AC_DEV_PG:-} ]]; then
		pgdir=$A2AC_DEV_PG
	else
		pgdir="$(scripts/postgres.sh home)/dev"
	fi
	if [[ -f $data/pg/data/PG_VERSION ]]; then
		say "note: $data/pg is the cluster of an older make run, no longer used (make clean stops and removes it)"
	fi
	say "starting private Postgres in $pgdir"
	scripts/postgres.sh start "$pgdir" >&2 ||
		die "the private Postgres in $pgdir did not start (log: $pgdir/log); make clean starts afresh"
	scripts/postgres.sh createdb "$pgdir" a2ac >&2
	DATABASE_URL=$(scripts/postgres.sh url "$pgdir" a2ac)
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
start demo-agent bin/demo-agent -addr "$DEMO_HOST:$DEMO_PORT"
start console-api bin/console-api serve
start connector bin/connector serve

API=http://127.0.0.1:$CONSOLE_PORT
for _ in $(seq 1 300); do
	if curl -fs "$API/readyz" >/dev/null 2>&1 && curl -fs "http://$DEMO_HOST:$DEMO_PORT/.well-known/agent.json" >/dev/null 2>&1; then
		break
	fi
	if exited; then
		wait "$gone_pid" && status=0 || status=$?
		ended "$gone" "$status"
	fi
	sleep 0.1
done
curl -fs "$API/readyz" >/dev/null || die "console API did not become ready in 30 s; see $data/logs/console-api.log"

# jsonfield NAME reads the first string value of NAME from the JSON on stdin (our own output).
jsonfield() { grep -o "\"$1\":\"[^\"]*\"" | sed -n 1p | cut -d'"' -f4; }

# The demo tenant and agent are created once and remembered in .data/demo.env (and again when
# the cluster was removed, e.g. by make clean, so the remembered token no longer works).
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

cat <<MSG || finish 0 "$(goodbye " (our output was closed)")"

  a2a-connector is up.

    web console   $API/           (paste the demo tenant's token: $DEMO_TOKEN)
    console API   $API            (reference: $API/api-docs; OpenAPI: $API/openapi.json)
    connector     127.0.0.1:$GRPC_PORT (gRPC; grpcurl -plaintext 127.0.0.1:$GRPC_PORT list)
    demo agent    http://$DEMO_HOST:$DEMO_PORT  ("超级AI助理", registered for the demo tenant)

  Chat with the demo agent (in another terminal):

    bin/connector chat -addr 127.0.0.1:$GRPC_PORT -tenant $DEMO_TENANT -agent $DEMO_AGENT

  Try: "重复我说的话：今天天气很好", "如何打好篮球" (slow stream), "帮我算加法" then "3和5",
       "进行闪光", "数一下我说了几句话", "tell me a joke" (handed back). English works too:
       "repeat after me: hello", "add please" then "3 and 5", "coach me at basketball".

  As a phone call (the voice extension): add -channel voice -locale en-US, then
       "check my balance" and /dtmf 204816# (the keypad), /silence (say nothing),
       "read me the terms" (must not be interrupted), /interrupt 20 before your next line,
       "I want to talk to a human" (escalate). The web console's Try it has the same buttons.

  Console API as the operator and as the demo tenant:

    export ADMIN=$A2AC_ADMIN_TOKEN TOKEN=$DEMO_TOKEN
    curl -s $API/v1/agents -H "Authorization: Bearer \$TOKEN"
    curl -s -X POST $API/v1/agents/validate -H "Authorization: Bearer \$TOKEN" -d '{"cardUrl":"$CARD_URL"}'
    curl -s -X POST $API/v1/agents/$DEMO_AGENT/test -H "Authorization: Bearer \$TOKEN" -d '{"text":"1与2相加是多少"}'

  Register the platform guide's sample card again under a new tenant (ready to paste):

    TOKEN2=\$(curl -s -X POST $API/v1/tenants -H "Authorization: Bearer $A2AC_ADMIN_TOKEN" -d '{"name":"Me"}' | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
    curl -s -X POST $API/v1/agents -H "Authorization: Bearer \$TOKEN2" -d '{"cardUrl":"$CARD_URL"}'

  The SSRF guard is on: only the demo agent's address ($DEMO_HOST) and plain HTTP are allowed
  here. A hostile URL gets a clear 422 (card_url_unusable, reason blocked_address), e.g.:

    curl -s -X POST $API/v1/agents/validate -H "Authorization: Bearer \$TOKEN" -d '{"cardUrl":"http://127.0.0.1:$CONSOLE_PORT/openapi.json"}'

  Ctrl-C stops everything. State stays for the next make run: secrets, demo ids and logs in
  $data/, Postgres in ${pgdir:-DATABASE_URL}; make clean removes both.
MSG

# Wait for the first child to end. Ctrl-C and the other signals run their trap instead, which
# never comes back here.
wait -n "${pids[@]}" && status=0 || status=$?
exited || gone="a child"
ended "$gone" "$status"
