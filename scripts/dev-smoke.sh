#!/usr/bin/env bash
# dev-smoke.sh proves the README's first command: it runs `make run` (scripts/dev.sh) on free
# ports with a throwaway state folder and cluster, waits for the "is up" banner, runs the printed
# chat command with one line, and checks that the demo agent's streamed answer came back. Then it
# stops the stack the way a terminal's Ctrl-C does, SIGINT to the whole process group, and checks
# the exit: status 0, one goodbye line, and no process left — neither the children nor Postgres.
# It does that again with the output piped into another process (`make run | tee log`, where the
# reader dies of the same Ctrl-C), and with stdout and stderr piped (`make run 2>&1 | tee log`,
# where even the goodbye meets a closed pipe). Written to files, its output holds no colour
# codes. Last, a child that crashes (SIGKILL) must stop the rest and make the exit 1, naming it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
home=$(scripts/postgres.sh home)
mkdir -p .tmp
state=$(mktemp -d "$root/.tmp/dev-smoke.XXXXXX")
pgdir=$(mktemp -d "$home/smoke.XXXXXX")
out="$state/out" err="$state/err" status="$state/status"

fail() {
	echo "dev-smoke: $*" >&2
	exit 1
}

# dev.sh must start with SIGINT at its default, as under a terminal's make: a shell without job
# control starts background commands with SIGINT ignored, and bash cannot trap a signal it
# inherited ignored. env --default-signal undoes that (GNU coreutils 8.31 or newer).
env --default-signal=INT true 2>/dev/null || fail "needs env --default-signal (GNU coreutils 8.31 or newer)"

# free_port prints a port nothing listens on, below the kernel's range for outgoing connections'
# local ports (which could take it from us between two launches) and above the range
# postgres.sh picks from.
free_port() {
	local low p
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	((low > 32000)) || low=60000
	while :; do
		p=$((31000 + RANDOM % (low - 31000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}
export CONSOLE_PORT GRPC_PORT DEMO_PORT A2AC_DEV_DATA="$state" A2AC_DEV_PG="$pgdir"

# launch MODE starts dev.sh in a session of its own under a small shell that plays make's part
# (it is in the process group, takes the SIGINT and waits) and writes dev.sh's exit status to
# $status. MODE: plain (output to files), pipe (stdout through cat, the "tee"), pipe-all
# (stdout and stderr through cat). Sets sid.
launch() {
	local run
	case $1 in
	plain) run='scripts/dev.sh >"$OUT" 2>"$ERR"; echo $? >"$STATUS"' ;;
	pipe) run='scripts/dev.sh 2>"$ERR" | cat >"$OUT"; echo "${PIPESTATUS[0]}" >"$STATUS"' ;;
	pipe-all) run='scripts/dev.sh 2>&1 | cat >"$OUT"; echo "${PIPESTATUS[0]}" >"$STATUS"' ;;
	esac
	# Fresh ports each time: another program on the machine may have taken the last ones. Three
	# distinct ones: free_port draws at random, and nothing listens on a port drawn twice until
	# the first of the three programs binds it (the second then fails: "address already in use").
	CONSOLE_PORT=$(free_port)
	GRPC_PORT=$(free_port)
	while ((GRPC_PORT == CONSOLE_PORT)); do GRPC_PORT=$(free_port); done
	DEMO_PORT=$(free_port)
	while ((DEMO_PORT == CONSOLE_PORT || DEMO_PORT == GRPC_PORT)); do DEMO_PORT=$(free_port); done
	rm -f "$out" "$err" "$status"
	: >"$err"
	OUT=$out ERR=$err STATUS=$status env --default-signal=INT setsid bash -c "trap : INT; $run" &
	sid=$!
}

stop_all() {
	if [[ -n ${sid:-} ]] && kill -0 "$sid" 2>/dev/null; then
		kill -TERM -- "-$sid" 2>/dev/null || true
		wait "$sid" 2>/dev/null || true
	fi
}
cleanup() {
	stop_all
	scripts/postgres.sh stop "$pgdir" >/dev/null 2>&1 || true
	rm -rf "$state" "$pgdir"
}
trap cleanup EXIT

show() {
	echo "---- output" >&2
	cat "$out" "$err" >&2 2>/dev/null || true
}

wait_up() {
	for _ in $(seq 1 240); do
		grep -q "a2a-connector is up" "$out" 2>/dev/null && break
		kill -0 "$sid" 2>/dev/null || { show; fail "$1: make run exited early"; }
		sleep 0.5
	done
	grep -q "a2a-connector is up" "$out" || { show; fail "$1: no banner within 120 s"; }
	# The postmaster runs in a session of its own (pg_ctl makes it so): remember it to check it.
	postmaster=$(head -n1 "$pgdir/data/postmaster.pid")
}

# ended MODE WANT waits for the launch to end and checks its status is WANT and that nothing of
# it is left: no process in its session, no Postgres.
ended() {
	for _ in $(seq 1 120); do
		kill -0 "$sid" 2>/dev/null || break
		sleep 0.5
	done
	kill -0 "$sid" 2>/dev/null && { show; fail "$1: make run did not end within 60 s"; }
	wait "$sid" 2>/dev/null || true
	local got
	got=$(cat "$status" 2>/dev/null || echo none)
	[[ $got == "$2" ]] || { show; fail "$1: exit status $got, want $2"; }
	local left
	left=$(ps -o pid=,args= -s "$sid" || true)
	[[ -z $left ]] || { show; fail "$1: processes left running: $left"; }
	# pg_ctl stop returns once the server removed its pid file, just before the process ends;
	# an ended process may stay a zombie until its parent (init) reaps it.
	for _ in $(seq 1 20); do
		[[ $(ps -o stat= -p "$postmaster" || true) == @(|Z*) ]] && break
		sleep 0.5
	done
	if [[ $(ps -o stat= -p "$postmaster" || true) != @(|Z*) || -f $pgdir/data/postmaster.pid ]]; then
		show
		fail "$1: Postgres (pid $postmaster) still running"
	fi
	sid=
}

# 1. The whole tour, then Ctrl-C.
launch plain
wait_up plain
chat=$(grep -m1 -o 'bin/connector chat .*' "$out")
[[ -n $chat ]] || { show; fail "the banner has no chat command"; }
reply=$(printf '重复我说的话：今天天气很好\n帮我算加法\n3和5\n/quit\n' | timeout 30 $chat)
for want in "今天天气很好" "[COMPLETED]" "[INPUT_REQUIRED; session held" "continuing held task" "相加等于8"; do
	if [[ $reply != *"$want"* ]]; then
		printf '%s\n' "$reply" >&2
		fail "chat output lacks \"$want\""
	fi
done

# The web console page is served. The page is read whole before it is matched: with pipefail,
# `curl | grep -q` fails whenever grep exits on the match while curl still has a write to make
# (curl then exits 23 on the closed pipe), which the page's size and the loopback's timing decide.
console=$(grep -o 'console API *http://[0-9.:]*' "$out" | grep -o 'http://.*')
page=$(curl -fsS "$console/") || fail "no web console at $console/"
[[ $page == *'<title>'* ]] || fail "the web console at $console/ has no <title>"

# The printed "register the sample card under a new tenant" one-liner works as pasted.
register=$(awk '/Register the platform guide/{f=1;next} f&&/TOKEN2=|curl -s -X POST/{print} f&&/Ctrl-C/{exit}' "$out" | sed 's/^ *//')
created=$(bash -c "$register")
[[ $created == *'"name":"超级AI助理"'* ]] || fail "printed registration did not register: $created"

# The printed SSRF example is refused.
ssrf=$(grep -m1 -o "curl -s -X POST .*validate.*127.0.0.1.*" "$out")
token=$(grep -m1 -o 'TOKEN=a2ac_[A-Za-z0-9_-]*' "$out" | cut -d= -f2)
refused=$(TOKEN=$token bash -c "$ssrf")
[[ $refused == *'"reason":"blocked_address"'* ]] || fail "the SSRF example was not refused: $refused"

kill -INT -- "-$sid"
ended "Ctrl-C" 0
goodbye=$(grep -c '^dev: stopped everything.*Bye\.$' "$err" || true)
[[ $goodbye == 1 ]] || { show; fail "Ctrl-C: want one goodbye line, got $goodbye"; }
grep -q 'a process exited\|exited on its own' "$err" && { show; fail "Ctrl-C was reported as a crash"; }
# Written to files, the progress lines are plain text: no terminal's colour codes.
if grep -q $'\033' "$out" "$err"; then
	show
	fail "make run wrote colour codes into a file"
fi
grep -q '^==> ' "$err" || { show; fail "no progress lines (==> …) in make run's stderr"; }

# 2. The same with stdout piped into a process that dies of the same Ctrl-C.
launch pipe
wait_up "piped"
kill -INT -- "-$sid"
ended "Ctrl-C, piped" 0
grep -q '^dev: stopped everything.*Bye\.$' "$err" || { show; fail "Ctrl-C, piped: no goodbye line"; }

# 3. And with stderr piped too: the goodbye itself meets a closed pipe.
launch pipe-all
wait_up "all piped"
kill -INT -- "-$sid"
ended "Ctrl-C, all piped" 0

# 4. A crash is not a goodbye: the connector dies, everything stops, exit 1 naming it.
launch plain
wait_up crash
connector=$(ps -o pid=,args= -s "$sid" | awk '/bin\/connector serve/{print $1}')
[[ -n $connector ]] || { show; fail "crash: no connector process found"; }
kill -KILL "$connector"
ended "crash" 1
grep -q '^dev: connector exited on its own (status 137)' "$err" || { show; fail "crash: the connector is not named"; }

echo "dev-smoke: ok (make run came up, chat streamed and held, the printed registration worked; Ctrl-C plain, piped and all piped exited 0 leaving nothing; a crash exited 1)"
