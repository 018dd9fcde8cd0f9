#!/usr/bin/env bash
# postgres.sh — a private, throwaway PostgreSQL cluster in a folder, for tests and local dev.
#
#   scripts/postgres.sh start DIR            init (once) and start; idempotent; port in DIR/port
#   scripts/postgres.sh stop DIR             fast stop; fine when not running
#   scripts/postgres.sh url DIR [DBNAME]     postgres://postgres@127.0.0.1:PORT/DBNAME?sslmode=disable
#   scripts/postgres.sh createdb DIR NAME    create database NAME if it does not exist
#   scripts/postgres.sh home                 print (and create) this checkout's cluster folder
#   scripts/postgres.sh clean                stop every cluster of this checkout; remove the folder
#
# Where clusters live: not inside the checkout, because the checkout may sit under a folder other
# users cannot enter (a `mktemp -d` folder, /root), and as root the server runs as user postgres,
# which must reach its data and socket folder. `home` is a folder in the system temp directory —
# $TMPDIR, else /var/tmp (kept across reboots, so `make run`'s agents survive one), else /tmp;
# when root, the first of those that other users can enter — named after the user id and a hash
# of the checkout's absolute path: two clones never share a cluster, and the same clone always
# finds its own again. It holds `dev` (`make run`), `smoke.*` and `test.*` (temporary clusters of
# the tests), and `checkout`, the path it belongs to.
#
# The cluster trusts every local connection (user postgres, no password), listens on 127.0.0.1
# only (make e2e-k8s adds the address of the bridge its pods sit on: PG_LISTEN_EXTRA=ADDR, and
# trusts their subnet: PG_TRUST_CIDR=CIDR), and runs without fsync: it is for tests and a laptop, never for data anyone keeps.
# Works as root (CI) — initdb and the server run as the `postgres` user through runuser — and as
# a normal user. Missing binaries are installed with apt-get when root; otherwise the script
# prints the command that would install them.
set -euo pipefail

prog=${0##*/}

die() {
	echo "$prog: $*" >&2
	exit 1
}

usage() {
	cat >&2 <<EOF
usage: $prog start DIR | stop DIR | url DIR [DBNAME] | createdb DIR NAME | home | clean
EOF
	exit 2
}

is_root() { [[ $(id -u) -eq 0 ]]; }

# find_bin sets PGBIN to a folder holding initdb and pg_ctl: the ones on PATH first, then the
# newest /usr/lib/postgresql/*/bin (Debian puts only wrappers on PATH, not initdb/pg_ctl).
find_bin() {
	local p d
	if p=$(command -v pg_ctl) && command -v initdb >/dev/null; then
		d=$(dirname "$(readlink -f "$p")")
		if [[ -x $d/initdb && -x $d/postgres ]]; then
			PGBIN=$d
			return 0
		fi
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then
			PGBIN=$d
			return 0
		fi
	done
	return 1
}

ensure_bin() {
	find_bin && return 0
	if ! is_root; then
		die "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin.
Install them with:
  sudo apt-get install -y postgresql"
	fi
	echo "$prog: installing PostgreSQL (apt-get install -y postgresql)" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get -o DPkg::Lock::Timeout=300 install -y -qq postgresql >/dev/null 2>&1; then
		apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
		apt-get -o DPkg::Lock::Timeout=300 install -y -qq postgresql >/dev/null
	fi
	find_bin || die "apt-get installed postgresql but initdb/pg_ctl are still not found"
}

# as_pg runs a command as the cluster owner: the postgres user when we are root (initdb and the
# server refuse to run as root), ourselves otherwise.
as_pg() {
	if is_root; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# set_dir makes DIR absolute and exists; with "create" it creates it.
set_dir() {
	local d=$1 mode=${2:-}
	[[ -n $d ]] || usage
	if [[ $mode == create ]]; then
		mkdir -p "$d"
	fi
	[[ -d $d ]] || die "$d: no such directory (run: $prog start $d)"
	DIR=$(cd "$d" && pwd -P)
	[[ $DIR != *"'"* ]] || die "$DIR: a single quote in the path is not supported"
	DATA=$DIR/data
}

running() {
	[[ -f $DATA/PG_VERSION ]] && as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

# port_in_use is true when something accepts TCP connections on 127.0.0.1:$1.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

read_port() {
	[[ -f $DIR/port ]] || die "$DIR: cluster not started (run: $prog start $DIR)"
	cat "$DIR/port"
}

cmd_start() {
	set_dir "${1:-}" create
	ensure_bin

	# Two starts of one DIR at once (parallel make targets) must not both initdb or both pick
	# a port. The server must not inherit fd 9, or it would hold the lock for its whole life.
	if command -v flock >/dev/null; then
		exec 9>"$DIR/.lock"
		flock 9
	fi

	if is_root; then
		chown -R postgres:postgres "$DIR"
		runuser -u postgres -- test -w "$DIR" ||
			die "user postgres cannot write $DIR (is a parent folder closed to other users?); use a folder under $(home_path)"
	fi

	if [[ ! -f $DATA/PG_VERSION ]]; then
		rm -rf "$DATA"
		as_pg "$PGBIN/initdb" -D "$DATA" -A trust --no-sync -U postgres --encoding UTF8 --locale C \
			>"$DIR/initdb.log" 2>&1 || {
			cat "$DIR/initdb.log" >&2
			die "initdb failed"
		}
	fi

	if [[ -n ${PG_TRUST_CIDR:-} ]] && ! grep -q "^host all all $PG_TRUST_CIDR trust" "$DATA/pg_hba.conf"; then
		echo "host all all $PG_TRUST_CIDR trust" >>"$DATA/pg_hba.conf"
	fi

	if running; then
		# postmaster.pid line 4 is the port the server listens on.
		sed -n 4p "$DATA/postmaster.pid" >"$DIR/port"
		echo "$prog: already running on port $(cat "$DIR/port") ($DIR)" >&2
		return 0
	fi

	# A Unix socket path is limited to 107 bytes; TCP is what we use anyway.
	local sockdir=$DIR
	if ((${#DIR} > 90)); then
		sockdir=
	fi

	# Reuse the last port when it is free, so URLs handed out earlier keep working after a
	# restart; otherwise try ports from a random base below the Linux ephemeral range.
	local tries=() port attempt
	if [[ -f $DIR/port ]]; then
		tries+=("$(cat "$DIR/port")")
	fi
	local base=$((15000 + RANDOM % 15000))
	for attempt in $(seq 0 19); do
		tries+=($((base + attempt * 37)))
	done

	for port in "${tries[@]}"; do
		[[ $port =~ ^[0-9]+$ ]] || continue
		port_in_use "$port" && continue
		if as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$DIR/log" -w -t 30 -o "-p $port -k '$sockdir' -c listen_addresses=127.0.0.1${PG_LISTEN_EXTRA:+,$PG_LISTEN_EXTRA} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null 2>&1 9>&-; then
			echo "$port" >"$DIR/port"
			echo "$prog: started on port $port ($DIR)" >&2
			return 0
		fi
		# Lost a race for the port: the server logs a bind failure; try the next one. (grep reads
		# all of it, not -q: under pipefail an early exit could fail tail and hide the match.)
		if tail -n 20 "$DIR/log" 2>/dev/null | grep 'could not bind\|Address already in use\|could not create any TCP/IP sockets' >/dev/null; then
			continue
		fi
		tail -n 20 "$DIR/log" >&2 || true
		die "pg_ctl start failed (log: $DIR/log)"
	done
	die "no free port found after ${#tries[@]} tries"
}

cmd_stop() {
	[[ -n ${1:-} ]] || usage
	[[ -d $1 ]] || return 0
	set_dir "$1"
	[[ -f $DATA/PG_VERSION ]] || return 0
	find_bin || die "PostgreSQL binaries not found; cannot stop $DIR"
	if running; then
		as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
		echo "$prog: stopped ($DIR)" >&2
	fi
}

cmd_url() {
	[[ -n ${1:-} ]] || usage
	set_dir "$1"
	local db=${2:-postgres}
	echo "postgres://postgres@127.0.0.1:$(read_port)/$db?sslmode=disable"
}

# psql_q runs one query as user postgres over TCP and prints the bare result.
psql_q() {
	local psql=psql
	[[ -x $PGBIN/psql ]] && psql=$PGBIN/psql
	"$psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(read_port)" -U postgres -d postgres -tA "$@"
}

db_exists() {
	# Through stdin, so psql interpolates :'name' as a quoted literal.
	[[ $(psql_q -v name="$1" <<<"select 1 from pg_database where datname = :'name'") == 1 ]]
}

cmd_createdb() {
	[[ -n ${1:-} && -n ${2:-} ]] || usage
	set_dir "$1"
	local name=$2
	[[ $name =~ ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ]] || die "$name: database names here are [A-Za-z_][A-Za-z0-9_]*, at most 63 characters"
	find_bin || die "PostgreSQL binaries not found"
	running || die "$DIR: cluster not running (run: $prog start $DIR)"
	db_exists "$name" && return 0
	# Someone may create it between the check and here; that is success too.
	psql_q -c "create database \"$name\"" 2>/dev/null || db_exists "$name" ||
		die "create database $name failed"
}

# checkout is the absolute, symlink-free path of this script's checkout.
checkout() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P); }

# others_can_enter is true when every folder on the path to $1 lets other users through (the x
# bit for others), so user postgres can reach a folder created inside it.
others_can_enter() {
	local p
	p=$(cd "$1" && pwd -P) || return 1
	while :; do
		((8#$(stat -c %a "$p") & 1)) || return 1
		[[ $p == / ]] && return 0
		p=$(dirname "$p")
	done
}

# home_path prints this checkout's cluster folder (see the header) without creating it.
home_path() {
	local root key base
	root=$(checkout)
	key=$(printf '%s' "$root" | sha256sum | cut -c1-12)
	for base in "${TMPDIR:-}" /var/tmp /tmp; do
		[[ -n $base && -d $base && -w $base ]] || continue
		base=$(cd "$base" && pwd -P)
		if is_root && ! others_can_enter "$base"; then
			continue
		fi
		echo "${base%/}/a2ac-pg-$(id -u)-$key"
		return 0
	done
	die "no usable temp folder: \$TMPDIR, /var/tmp and /tmp are all missing, not writable or (as root) closed to user postgres"
}

cmd_home() {
	local home
	home=$(home_path)
	# It sits in a folder anyone may write to: take it only if it is a real folder of ours.
	mkdir -m 0700 "$home" 2>/dev/null || true
	if [[ -L $home || ! -d $home || ! -O $home ]]; then
		die "$home exists but is not a folder owned by $(id -un); remove it, or set TMPDIR to another folder"
	fi
	if is_root; then
		chmod 0711 "$home" # user postgres passes through to its cluster folders, sees no names
	else
		chmod 0700 "$home"
	fi
	checkout >"$home/checkout"
	echo "$home"
}

# cmd_clean stops and removes every cluster of this checkout: the ones in its home, and the ones
# older versions of the scripts kept inside the checkout (.data/pg, .tmp/pg-test.*).
cmd_clean() {
	local home root d
	home=$(home_path)
	root=$(checkout)
	for d in "$home"/*/ "$root"/.data/pg/ "$root"/.tmp/*/ "$root"/.tmp/*/pg/; do
		[[ -f $d/data/PG_VERSION ]] || continue
		(cmd_stop "${d%/}") || echo "$prog: could not stop the cluster in $d; removing it anyway" >&2
	done
	if [[ -d $home && ! -L $home ]]; then
		rm -rf "$home"
		echo "$prog: removed $home" >&2
	fi
}

main() {
	local cmd=${1:-}
	[[ $# -gt 0 ]] && shift
	case $cmd in
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	url) cmd_url "$@" ;;
	createdb) cmd_createdb "$@" ;;
	home) cmd_home ;;
	clean) cmd_clean ;;
	*) usage ;;
	esac
}

main "$@"
