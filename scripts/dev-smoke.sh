#!/usr/bin/env bash
# dev-smoke.sh proves the README's first command: it runs `make run` (scripts/dev.sh) on free
# ports with a throwaway state folder, waits for the "is up" banner, runs the printed chat
# command with one line, and checks that the demo agent's streamed answer came back. Then it
# stops the stack with SIGTERM (as Ctrl-C would) and checks that everything went away.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mkdir -p .tmp
state=$(mktemp -d "$root/.tmp/dev-smoke.XXXXXX")
chmod 755 "$state" # the postgres user must reach $state/pg
out="$state.out"

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

CONSOLE_PORT=$(free_port) GRPC_PORT=$(free_port) DEMO_PORT=$(free_port) A2AC_DEV_DATA="$state" \
	setsid scripts/dev.sh >"$out" 2>&1 &
dev=$!
cleanup() {
	kill -TERM "$dev" 2>/dev/null || true
	wait "$dev" 2>/dev/null || true
	scripts/postgres.sh stop "$state/pg" >/dev/null 2>&1 || true
	rm -rf "$state" "$out"
}
trap cleanup EXIT

for _ in $(seq 1 240); do
	grep -q "a2a-connector is up" "$out" 2>/dev/null && break
	kill -0 "$dev" 2>/dev/null || { cat "$out" >&2; echo "dev-smoke: make run exited early" >&2; exit 1; }
	sleep 0.5
done
grep -q "a2a-connector is up" "$out" || { cat "$out" >&2; echo "dev-smoke: no banner within 120 s" >&2; exit 1; }

chat=$(grep -o 'bin/connector chat .*' "$out" | head -n1)
[[ -n $chat ]] || { cat "$out" >&2; echo "dev-smoke: the banner has no chat command" >&2; exit 1; }
reply=$(printf '重复我说的话：今天天气很好\n帮我算加法\n3和5\n/quit\n' | timeout 30 $chat)
for want in "今天天气很好" "[COMPLETED]" "[INPUT_REQUIRED; session held" "continuing held task" "相加等于8"; do
	if [[ $reply != *"$want"* ]]; then
		printf '%s\n' "$reply" >&2
		echo "dev-smoke: chat output lacks \"$want\"" >&2
		exit 1
	fi
done

# The web console page is served.
console=$(grep -o 'console API *http://[0-9.:]*' "$out" | grep -o 'http://.*')
curl -fs "$console/" | grep -q '<title>' || { echo "dev-smoke: no web console at $console/" >&2; exit 1; }

# The printed "register the sample card under a new tenant" one-liner works as pasted.
register=$(awk '/Register the platform guide/{f=1;next} f&&/TOKEN2=|curl -s -X POST/{print} f&&/Ctrl-C/{exit}' "$out" | sed 's/^ *//')
created=$(bash -c "$register")
[[ $created == *'"name":"超级AI助理"'* ]] || { echo "dev-smoke: printed registration did not register: $created" >&2; exit 1; }

# The printed SSRF example is refused.
ssrf=$(grep -o "curl -s -X POST .*validate.*127.0.0.1.*" "$out" | head -n1)
token=$(grep -o 'TOKEN=a2ac_[A-Za-z0-9_-]*' "$out" | head -n1 | cut -d= -f2)
refused=$(TOKEN=$token bash -c "$ssrf")
[[ $refused == *'"reason":"blocked_address"'* ]] || { echo "dev-smoke: the SSRF example was not refused: $refused" >&2; exit 1; }

kill -TERM "$dev"
for _ in $(seq 1 60); do kill -0 "$dev" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$dev" 2>/dev/null; then echo "dev-smoke: make run did not stop on SIGTERM" >&2; exit 1; fi
if [[ -f $state/pg/data/postmaster.pid ]]; then echo "dev-smoke: Postgres still running after stop" >&2; exit 1; fi
echo "dev-smoke: ok (make run came up, chat streamed and held, the printed registration worked, clean stop)"
