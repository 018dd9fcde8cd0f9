#!/usr/bin/env bash
# e2e-failover.sh — the connector across a real Postgres failover (`make e2e-failover`; not part
# of `make test`: it takes about two minutes and needs Patroni and etcd).
#
# It starts, all on loopback and in a fresh folder under the system temp directory:
#   - etcd (one member), the store Patroni keeps its leader key in;
#   - two Postgres nodes managed by Patroni, streaming, with synchronous_mode: true (a commit that
#     waits for its WAL also waits for the standby);
# then builds the connector and cmd/failoverdrill, which runs the connector on the multi-host URL
#   postgres://127.0.0.1:P1,127.0.0.1:P2/a2ac?target_session_attrs=read-write&connect_timeout=2
# under steady load with the demo agent, kills the primary (kill -9 of its postgres alone, then
# of its Patroni and postgres: a real failover), measures how long turns fail, checks every hold
# confirmed to the engine, brings the old primary back as a replica and checks it takes no
# writes. The figures it prints are the ones in docs/operations.md.
#
#   scripts/e2e-failover.sh [failoverdrill flags]     (e.g. -workers 16)
#
# As root, Patroni and Postgres run as the `postgres` user (initdb refuses root), and missing
# packages are installed with apt-get (Debian bookworm: patroni 3.0.2, etcd-server 3.4.23).
# Everything it started is stopped, and the folder removed, when it ends.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
prog=${0##*/}

die() {
	echo "$prog: $*" >&2
	exit 1
}
is_root() { [[ $(id -u) -eq 0 ]]; }

# Tools ----------------------------------------------------------------------------------------
need=()
command -v patroni >/dev/null || need+=(patroni)
command -v etcd >/dev/null || need+=(etcd-server)
if ((${#need[@]})); then
	is_root || die "missing ${need[*]}: sudo apt-get install -y ${need[*]}"
	echo "$prog: installing ${need[*]} (apt-get)" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt="apt-get -o DPkg::Lock::Timeout=300" # another install may hold the dpkg lock
	$apt install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
		{ $apt update -qq >/dev/null && $apt install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi
pgbin=
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
	if [[ -x $d/postgres && -x $d/initdb && -x $d/pg_ctl ]]; then
		pgbin=$d
		break
	fi
done
[[ -n $pgbin ]] || die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install -y postgresql)"

# as_pg runs a command as the cluster owner. It execs (setpriv execs in turn): run in the
# background as `(as_pg cmd) &`, $! is then the command's own pid, which the drill may kill.
as_pg() {
	if is_root; then
		HOME=$work exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
	else
		exec "$@"
	fi
}

# Folder and ports -----------------------------------------------------------------------------
home=$("$root/scripts/postgres.sh" home) # a folder user postgres can pass through
work=$(mktemp -d "$home/failover.XXXXXX")
chmod 755 "$work"
pids=()
cleanup() {
	trap - EXIT INT TERM HUP
	local f p
	# The drill may have restarted a node's Patroni: its pid files say which processes are ours.
	local ours=()
	for f in "$work"/n*/patroni.pid; do
		[[ -f $f ]] && ours+=("$(cat "$f")")
	done
	pids=("${ours[@]}" "${pids[@]}") # Patroni first: without etcd it would wait out its retries
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
	done
	for d in "$work"/n*/data; do
		[[ -f $d/postmaster.pid ]] && (as_pg "$pgbin/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1) || true
	done
	if [[ ${KEEP:-} == 1 ]]; then
		echo "$prog: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
taken=" "
free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 10000))
		[[ $taken == *" $p "* ]] && continue
		port_in_use "$p" && continue
		taken+="$p "
		echo "$p"
		return 0
	done
	die "no free port"
}
etcd_client=$(free_port)
taken+="$etcd_client "
etcd_peer=$(free_port)
taken+="$etcd_peer "

# etcd -----------------------------------------------------------------------------------------
mkdir -p "$work/etcd"
etcd --name e1 --data-dir "$work/etcd/data" \
	--listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
	--listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
	--initial-cluster "e1=http://127.0.0.1:$etcd_peer" --initial-cluster-state new \
	>"$work/etcd/log" 2>&1 &
pids+=($!)

wait_http() { # URL [seconds]: until it answers 200
	local deadline=$((SECONDS + ${2:-60}))
	until [[ $(curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null) == 200 ]]; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}
wait_http "http://127.0.0.1:$etcd_client/health" 30 || {
	tail -n 20 "$work/etcd/log" >&2
	die "etcd did not start"
}

# Patroni nodes --------------------------------------------------------------------------------
# ttl 20 s is Patroni's floor for the leader key: a primary whose Patroni dies too is replaced
# after at most that. loop_wait 1 s: each Patroni looks at the cluster every second.
node_config() { # NAME PGPORT RESTPORT
	local n=$1 pg=$2 rest=$3
	mkdir -p "$work/$n"
	cat >"$work/$n/patroni.yml" <<EOF
scope: a2ac-failover
name: $n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest
etcd3:
  hosts: 127.0.0.1:$etcd_client
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_log_hints: "on"
        max_connections: 200
        max_wal_senders: 10
        wal_keep_size: 256MB
  initdb:
    - encoding: UTF8
    - locale: C
    - auth: trust
postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $work/$n/data
  bin_dir: $pgbin
  pgpass: $work/$n/pgpass
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: $work/$n
EOF
	echo "$work/$n/patroni.yml"
}
declare -A pgport restport
for n in n1 n2; do
	pgport[$n]=$(free_port)
	taken+="${pgport[$n]} "
	restport[$n]=$(free_port)
	taken+="${restport[$n]} "
	node_config "$n" "${pgport[$n]}" "${restport[$n]}" >/dev/null
done
if is_root; then
	chown -R postgres:postgres "$work/n1" "$work/n2"
fi

start_node() { # NAME
	(as_pg patroni "$work/$1/patroni.yml" >>"$work/$1/patroni.log" 2>&1) &
	echo $! >"$work/$1/patroni.pid"
	disown # the drill kills it: no "Killed" notice from this shell
}
start_node n1
wait_http "http://127.0.0.1:${restport[n1]}/primary" 120 || {
	tail -n 30 "$work/n1/patroni.log" >&2
	die "n1 did not become the primary"
}
start_node n2
wait_http "http://127.0.0.1:${restport[n2]}/sync" 120 || {
	tail -n 30 "$work/n2/patroni.log" >&2
	die "n2 did not become the synchronous standby"
}
echo "$prog: n1 primary on ${pgport[n1]}, n2 synchronous standby on ${pgport[n2]} (etcd $etcd_client, folder $work)" >&2

# The drill ------------------------------------------------------------------------------------
mkdir -p "$work/bin"
go build -o "$work/bin/connector" ./cmd/connector
go build -o "$work/bin/failoverdrill" ./cmd/failoverdrill
node_flag() { # NAME
	echo "name=$1,pg=127.0.0.1:${pgport[$1]},rest=http://127.0.0.1:${restport[$1]},data=$work/$1/data,config=$work/$1/patroni.yml,pidfile=$work/$1/patroni.pid"
}
start_cmd=(patroni)
if is_root; then
	start_cmd=(setpriv --reuid=postgres --regid=postgres --init-groups -- patroni)
fi
"$work/bin/failoverdrill" -connector "$work/bin/connector" -log-dir "$work" \
	-node "$(node_flag n1)" -node "$(node_flag n2)" -start-node "${start_cmd[*]}" "$@"
