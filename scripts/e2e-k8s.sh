#!/usr/bin/env bash
# e2e-k8s.sh is `make e2e-k8s`: the Helm chart on a real Kubernetes control plane, built from
# source (scripts/k8s-tools.sh caches every build in .tools/k8s/), and then on a real node.
#
#   control plane  etcd v3.6.8, kube-apiserver, kube-controller-manager, kube-scheduler v1.33.13,
#                  on loopback ports picked at run time; RBAC, PodSecurity admission
#   stage 1        kwok fakes one node (pods "run", Job pods succeed). In a namespace enforcing
#                  PodSecurity "restricted": helm install --wait (the chart's minimal values),
#                  helm upgrade (a changed value rolls the pods), helm rollback, helm uninstall.
#                  The order of creations is read from the API (watch events and the
#                  resourceVersions etcd gave them), not assumed.
#   stage 2        a real node: containerd + runc + CNI bridge from Debian, kubelet and kube-proxy
#                  (nftables) v1.33.13, images built from the project's static binaries with
#                  crane. Pods become Ready against a real Postgres, the hook Job really migrates,
#                  a turn through the connector Service reaches the demo agent and streams back,
#                  `kubectl rollout restart` of the connector under a trickle of turns loses none,
#                  and the pods' traces reach an OpenTelemetry Collector.
#
#   scripts/e2e-k8s.sh             both stages
#   E2E_K8S_STAGES=1 scripts/e2e-k8s.sh   stage 1 only (no root-only node pieces)
#   E2E_K8S_KEEP=1 scripts/e2e-k8s.sh     keep the run files (logs, events, pods' logs) after a pass
#
# Stage 2 needs root. Everything it makes is its own and goes away on exit: a bridge (a2ak<id>)
# with a private /24 that no route of the machine uses, the pods' network namespaces, an nftables
# table (kube-proxy's, and one dropping anything the bridge would forward elsewhere), the
# kubelet's cgroups and iptables canary chains, mounts under the run folder; the kernel
# settings the kubelet changes are put back. Postgres, the demo agent and the collector listen on
# the bridge's own address, so pods reach them without any traffic leaving the bridge; the
# machine's ip_forward is left as it is (off here), so pods can reach nothing else.
# Run files are in .tmp/e2e-k8s.*/ (kept when a check fails or with E2E_K8S_KEEP=1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

STAGES=${E2E_K8S_STAGES:-1 2}
readonly NS=a2a-e2e RELEASE=a2ac CHART=deploy/helm/a2a-connector
readonly FULL=$RELEASE-a2a-connector
readonly SERVICE_CIDR=10.254.0.0/24

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
	printf 'e2e-k8s: %s\n' "$*" >&2
	exit 1
}

# Results for the summary table: "check|result|detail".
results=()
failures=0
pass() { results+=("$1|ok|$2"); }
fail() {
	results+=("$1|FAIL|$2")
	failures=$((failures + 1))
	printf 'e2e-k8s: FAIL %s: %s\n' "$1" "$2" >&2
}
# check NAME DETAIL CMD... records ok when CMD succeeds, FAIL otherwise.
check() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
}
summary() {
	((${#results[@]})) || return 0
	printf '\n| %s | %s | %s |\n|---|---|---|\n' check result detail
	local r name res detail
	for r in "${results[@]}"; do
		IFS='|' read -r name res detail <<<"$r"
		printf '| %s | %s | %s |\n' "$name" "$res" "$detail"
	done
	printf '\n%d checks, %d failed\n' "${#results[@]}" "$failures"
}

if [[ " $STAGES " == *" 2 "* && $(id -u) -ne 0 ]]; then
	die "stage 2 (a real node: containerd, cgroups, a bridge) needs root; E2E_K8S_STAGES=1 runs stage 1 alone"
fi

mkdir -p .tmp
run=$(mktemp -d "$root/.tmp/e2e-k8s.XXXXXX")
chmod 755 "$run"
pids=()      # control plane and helpers, stopped last, in reverse order
node_pids=() # kube-proxy, kubelet, containerd
ok=false
node_up=false
cleanup_fns=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	summary
	local i
	for ((i = ${#cleanup_fns[@]} - 1; i >= 0; i--)); do
		${cleanup_fns[i]}
	done
	stop_pids "${pids[@]}"
	if $ok && ((rc == 0)) && [[ -z ${E2E_K8S_KEEP:-} ]]; then
		rm -rf "$run"
	else
		echo "e2e-k8s: run files kept in $run" >&2
	fi
	exit "$rc"
}
# stop_pids stops processes we started, newest first, and waits for each.
stop_pids() {
	local i p
	for ((i = $# ; i >= 1; i--)); do
		p=${!i}
		kill -TERM "$p" 2>/dev/null || continue
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# free_port prints a loopback port nothing listens on and none of its arguments.
free_port() {
	local low p
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	((low > 32000)) || low=60000
	while :; do
		p=$((31000 + RANDOM % (low - 31000)))
		[[ " $* ${taken_ports:-} " == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			taken_ports="${taken_ports:-} $p"
			echo "$p"
			return
		fi
	done
}
tcp_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# wait_for NAME SECONDS CMD... retries CMD until it succeeds; a started process that died
# meanwhile fails at once.
wait_for() {
	local name=$1 secs=$2 pid
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		for pid in "${pids[@]}" "${node_pids[@]}"; do
			kill -0 "$pid" 2>/dev/null || die "a process died while waiting for $name (pid $pid; logs in $run/logs)"
		done
		sleep 0.2
	done
	die "$name was not ready in ${secs}s (logs in $run/logs)"
}

# start NAME CMD... starts a process with its log in $run/logs/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$run/logs/$name.log" 2>&1 &
	pids+=($!)
}

# warnings WHAT OUTPUT adds a row for the warnings helm or the API server printed, if any.
warnings() {
	local w
	w=$(grep -i 'warning' <<<"$2" | sort -u | head -3 | paste -sd';' || true)
	[[ -z $w ]] || results+=("$1: warnings|note|$w")
}

secs_since() { echo $(($(date +%s) - $1)); }

###############################################################################
# Tools
###############################################################################
t0=$(date +%s)
say "tools (cached in .tools/k8s; the first build takes 10-30 min)"
if [[ " $STAGES " == *" 2 "* ]]; then
	scripts/k8s-tools.sh node
else
	scripts/k8s-tools.sh control-plane
fi
scripts/tools.sh helm >/dev/null
tools=$(scripts/k8s-tools.sh dir)
K8S_BIN=$tools/kubernetes-v1.33.13
ETCD=$tools/etcd-v3.6.8/etcd
KWOK_DIR=$tools/kwok-v0.8.0
HELM="$(scripts/tools.sh bin)/helm"
command -v kubectl >/dev/null || die "kubectl is needed (any 1.32+)"
command -v jq >/dev/null || die "jq is needed: apt-get install -y jq"
tools_secs=$(secs_since "$t0")

mkdir -p "$run/logs" "$run/pki"
export KUBECONFIG=$run/kubeconfig

###############################################################################
# Control plane
###############################################################################
t1=$(date +%s)
say "control plane in $run"
etcd_port=$(free_port)
etcd_peer=$(free_port)
api_port=$(free_port)
start etcd "$ETCD" --name e2e --data-dir "$run/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
	--initial-cluster "e2e=http://127.0.0.1:$etcd_peer" --listen-metrics-urls "" \
	--unsafe-no-fsync --quota-backend-bytes=$((512 * 1024 * 1024))
wait_for etcd 30 tcp_open 127.0.0.1 "$etcd_port"

openssl genrsa -out "$run/pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$run/pki/sa.key" -pubout -out "$run/pki/sa.pub" 2>/dev/null
admin_token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$admin_token,admin,admin,system:masters" >"$run/pki/tokens.csv"
# The apiserver makes itself a self-signed serving certificate for 127.0.0.1 (--cert-dir).
start kube-apiserver "$K8S_BIN/kube-apiserver" \
	--etcd-servers "http://127.0.0.1:$etcd_port" \
	--bind-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$run/pki" \
	--endpoint-reconciler-type none --kubelet-preferred-address-types InternalIP \
	--service-cluster-ip-range "$SERVICE_CIDR" \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$run/pki/sa.pub" --service-account-signing-key-file "$run/pki/sa.key" \
	--token-auth-file "$run/pki/tokens.csv" --authorization-mode Node,RBAC \
	--allow-privileged=true --profiling=false --event-ttl 2h
cat >"$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: e2e
    cluster:
      server: https://127.0.0.1:$api_port
      insecure-skip-tls-verify: true
users:
  - name: admin
    user:
      token: $admin_token
contexts:
  - name: e2e
    context: {cluster: e2e, user: admin}
current-context: e2e
EOF
chmod 600 "$KUBECONFIG"
wait_for kube-apiserver 120 kubectl get --raw /readyz
start kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
	--leader-elect=false --secure-port 0 --profiling=false \
	--service-account-private-key-file "$run/pki/sa.key" --root-ca-file "$run/pki/apiserver.crt" \
	--use-service-account-credentials=false --controllers '*'
start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false \
	--secure-port 0 --profiling=false
server_version=$(kubectl version -o json | jq -r .serverVersion.gitVersion)
# The default ServiceAccount appears once the controller-manager runs: pods need it.
wait_for "controller-manager (default ServiceAccount)" 60 kubectl get serviceaccount default
cp_secs=$(secs_since "$t1")
check "control plane ready" "kube-apiserver $server_version, etcd 3.6.8, controller-manager, scheduler; /readyz in ${cp_secs}s" \
	test "$server_version" = v1.33.13

# The namespace enforces PodSecurity "restricted" (latest): admission must refuse a root pod.
kubectl create namespace "$NS" >/dev/null
kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted \
	pod-security.kubernetes.io/enforce-version=latest pod-security.kubernetes.io/warn=restricted >/dev/null
if out=$(kubectl -n "$NS" run psa-probe --image=busybox --restart=Never --dry-run=server 2>&1); then
	fail "namespace enforces restricted" "a pod without securityContext was admitted"
else
	check "namespace enforces restricted" "a pod without securityContext is refused: $(grep -o 'violates PodSecurity "restricted:latest"' <<<"$out" | head -1)" \
		grep -q 'violates PodSecurity' <<<"$out"
fi

###############################################################################
# Watches: every creation in the namespace, in the order etcd made them.
###############################################################################
# watch_kind KIND records `kubectl get -w` of one kind, as the API sends it, in watch-KIND.json.
# A creation's resourceVersion is etcd's revision at that write, one counter for all keys, so
# comparing them across kinds gives the true order of creation.
watch_kind() {
	kubectl -n "$NS" get "$1" --watch --output-watch-events -o json >"$run/watch-$1.json" 2>"$run/logs/watch-$1.err" &
	pids+=($!)
}
for kind in secrets configmaps jobs.batch deployments.apps replicasets.apps pods; do
	watch_kind "$kind"
done
sleep 2 # the watches are listening before anything is created
# ev KIND prints the watch events of KIND so far, one compact line each (a half-written last
# event is skipped).
ev() {
	jq -c '{type, kind: .object.kind, name: .object.metadata.name,
		rv: (.object.metadata.resourceVersion | tonumber), created: .object.metadata.creationTimestamp,
		status: (.object.status // null), owner: (.object.metadata.ownerReferences // [] | map(.kind + "/" + .name)),
		deleting: (.object.metadata.deletionTimestamp != null)}' "$run/watch-$1.json" 2>/dev/null || true
}
# first_rv KIND NAME_PREFIX [AFTER_RV]: resourceVersion of the first ADDED event of such an
# object after AFTER_RV, or 0.
first_rv() {
	ev "$1" | jq -s --arg p "$2" --argjson after "${3:-0}" \
		'[.[] | select(.type == "ADDED" and (.name | startswith($p)) and .rv > $after) | .rv] | min // 0'
}
last_rv() { kubectl get --raw "/api/v1/namespaces/$NS/configmaps?limit=1" | jq -r '.metadata.resourceVersion'; }

###############################################################################
# Stage 1: kwok
###############################################################################
stage1() {
	say "stage 1: kwok node"
	local t s
	t=$(date +%s)
	start kwok "$KWOK_DIR/kwok" --kubeconfig "$KUBECONFIG" --config "$KWOK_DIR/stages.yaml" \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-lease-duration-seconds 40 \
		--cidr 10.0.0.1/24 --node-ip 10.0.0.254 --server-address "127.0.0.1:$(free_port)"
	kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-0
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    topology.kubernetes.io/zone: e2e-a
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
EOF
	wait_for "kwok node Ready" 60 sh -c "kubectl get node kwok-node-0 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"
	pass "kwok node Ready" "kwok v0.8.0, fast stages (pods Ready at once, Job pods Succeeded)"

	# install
	local values=(-f deploy/helm/test/values-minimal.yaml --set image.repository=registry.local/a2a-connector)
	local rv0 out
	rv0=$(last_rv)
	s=$(date +%s)
	if out=$("$HELM" install "$RELEASE" "$CHART" -n "$NS" "${values[@]}" --wait --timeout 3m 2>&1); then
		pass "helm install --wait" "minimal values, $(secs_since "$s")s; status $("$HELM" status "$RELEASE" -n "$NS" -o json | jq -r .info.status)"
		warnings "helm install" "$out"
	else
		fail "helm install --wait" "$(tail -1 <<<"$out")"
		return
	fi
	check_hooks install "$rv0"
	check "pods admitted under restricted" "connector 2/2, console-api 2/2 Ready" deployments_ready 2
	local sum1
	sum1=$(kubectl -n "$NS" get deploy "$FULL-connector" -o jsonpath='{.spec.template.metadata.annotations.checksum/config}')

	# upgrade with a changed value: the ConfigMap changes, so does the pods' checksum: a rollout.
	rv0=$(last_rv)
	s=$(date +%s)
	if out=$("$HELM" upgrade "$RELEASE" "$CHART" -n "$NS" "${values[@]}" --set config.logLevel=debug --wait --timeout 3m 2>&1); then
		pass "helm upgrade --wait" "config.logLevel=debug, $(secs_since "$s")s; revision $("$HELM" status "$RELEASE" -n "$NS" -o json | jq -r .version)"
		warnings "helm upgrade" "$out"
	else
		fail "helm upgrade --wait" "$(tail -1 <<<"$out")"
		return
	fi
	check_hooks upgrade "$rv0"
	check_rollout upgrade "$rv0"
	local sum2
	sum2=$(kubectl -n "$NS" get deploy "$FULL-connector" -o jsonpath='{.spec.template.metadata.annotations.checksum/config}')
	check "upgrade rolls the pods" "checksum/config ${sum1:0:8} -> ${sum2:0:8}; ConfigMap A2AC_LOG_LEVEL=$(kubectl -n "$NS" get cm "$FULL-config" -o jsonpath='{.data.A2AC_LOG_LEVEL}')" \
		test -n "$sum2" -a "$sum1" != "$sum2"

	# rollback to revision 1
	rv0=$(last_rv)
	s=$(date +%s)
	if out=$("$HELM" rollback "$RELEASE" 1 -n "$NS" --wait --timeout 3m 2>&1); then
		pass "helm rollback 1 --wait" "$(secs_since "$s")s; revision $("$HELM" status "$RELEASE" -n "$NS" -o json | jq -r .version)"
		warnings "helm rollback" "$out"
	else
		fail "helm rollback 1 --wait" "$(tail -1 <<<"$out")"
		return
	fi
	local sum3 level jobs_rb secret_rb
	sum3=$(kubectl -n "$NS" get deploy "$FULL-connector" -o jsonpath='{.spec.template.metadata.annotations.checksum/config}')
	level=$(kubectl -n "$NS" get cm "$FULL-config" -o jsonpath='{.data.A2AC_LOG_LEVEL}')
	check "rollback restores revision 1" "checksum/config back to ${sum3:0:8}, A2AC_LOG_LEVEL=$level" test "$sum3" = "$sum1" -a "$level" = info
	check_rollout rollback "$rv0"
	jobs_rb=$(first_rv jobs.batch "$FULL-migrate" "$rv0")
	secret_rb=$(first_rv secrets "$FULL-secret" "$rv0")
	check "rollback runs no migration" "no Job created by the rollback (the hook is pre-install,pre-upgrade); the Secret re-created as its pre-rollback hook (rv $secret_rb)" \
		test "$jobs_rb" = 0 -a "$secret_rb" != 0
	deployments_ready 2 || fail "ready after rollback" "$(kubectl -n "$NS" get deploy --no-headers 2>&1 | tr '\n' ';')"

	check_uninstall
	stage1_secs=$(secs_since "$t")
	stop_one kwok
	kubectl delete node kwok-node-0 --wait=false >/dev/null
}

# deployments_ready N: both Deployments have N updated, ready, available replicas.
deployments_ready() {
	local d
	for d in connector console-api; do
		kubectl -n "$NS" get deploy "$FULL-$d" -o json |
			jq -e --argjson n "$1" '.status.readyReplicas == $n and .status.updatedReplicas == $n and .status.availableReplicas == $n and (.status.replicas == $n)' >/dev/null || return 1
	done
}

# check_hooks WHAT RV0: after RV0, the chart's Secret (hook weight -10) was created before the
# migration Job (weight 0), the Job before any Deployment or ReplicaSet change, its pod
# succeeded, and the Job was deleted afterwards (hook-succeeded).
check_hooks() {
	local what=$1 rv0=$2 sec job dep rs pod_ok job_del
	sec=$(first_rv secrets "$FULL-secret" "$rv0")
	job=$(first_rv jobs.batch "$FULL-migrate" "$rv0")
	# The first write to a Deployment or ReplicaSet after rv0 (creation or a template change).
	dep=$({ ev deployments.apps; ev replicasets.apps; } |
		jq -s --argjson a "$rv0" '[.[] | select(.rv > $a) | .rv] | min // 0')
	pod_ok=$(ev pods | jq -s --arg j "Job/$FULL-migrate" --argjson a "$rv0" '[.[] | select(.rv > $a and (.owner | index($j)) and .status.phase == "Succeeded")] | length')
	job_del=$(ev jobs.batch | jq -s --arg n "$FULL-migrate" --argjson a "$rv0" '[.[] | select(.name == $n and .type == "DELETED" and .rv > $a)] | length')
	if ((sec > 0 && job > sec && dep > job)); then
		pass "$what: hooks before the Deployments" "Secret rv $sec < migrate Job rv $job < first Deployment/ReplicaSet write rv $dep"
	else
		fail "$what: hooks before the Deployments" "Secret rv $sec, Job rv $job, first Deployment/ReplicaSet write rv $dep"
	fi
	if ((pod_ok > 0 && job_del > 0)); then
		pass "$what: Job per its delete policy" "its pod Succeeded, then the Job was DELETED (hook-succeeded); $(kubectl -n "$NS" get jobs --no-headers 2>/dev/null | wc -l) Jobs left"
	else
		fail "$what: Job per its delete policy" "succeeded pods $pod_ok, Job DELETED events $job_del"
	fi
}

# check_rollout WHAT RV0: each Deployment got a new ReplicaSet that reached 2 ready, the old one
# went to 0, and the Deployment never reported fewer than 2 available replicas (maxUnavailable 0).
check_rollout() {
	local what=$1 rv0=$2 d min rs
	for d in connector console-api; do
		min=$(ev deployments.apps | jq -s --arg n "$FULL-$d" --argjson a "$rv0" '[.[] | select(.name == $n and .rv > $a) | .status.availableReplicas // 0] | min // -1')
		rs=$(kubectl -n "$NS" get rs -l "app.kubernetes.io/component=$d" -o json |
			jq -r '[.items[] | "\(.metadata.annotations["deployment.kubernetes.io/revision"]):\(.status.replicas)"] | sort | join(" ")')
		if ((min >= 2)); then
			pass "$what: $d rolled, capacity kept" "ReplicaSets revision:replicas $rs; available never below $min"
		else
			fail "$what: $d rolled, capacity kept" "ReplicaSets $rs; available fell to $min"
		fi
	done
}

# check_uninstall [PREFIX]: helm uninstall --wait leaves only what docs/operations.md says it
# keeps, once the pods are gone (uninstall does not wait for them: they drain first).
check_uninstall() {
	local p=${1:-} s out left pods_gone
	s=$(date +%s)
	if out=$("$HELM" uninstall "$RELEASE" -n "$NS" --wait --timeout 3m 2>&1); then
		pass "${p}helm uninstall --wait" "$(secs_since "$s")s"
	else
		fail "${p}helm uninstall --wait" "$(tail -1 <<<"$out")"
	fi
	for _ in $(seq 120); do
		[[ -z $(kubectl -n "$NS" get pods -o name 2>/dev/null) ]] && break
		sleep 1
	done
	pods_gone=$(secs_since "$s")
	# Everything namespaced that is left, but what Kubernetes itself puts in every namespace.
	# The garbage collector removes what hangs on deleted owners (EndpointSlices) a moment later.
	local kinds
	kinds=$(kubectl api-resources --verbs=list --namespaced -o name | grep -v '^events' | paste -sd,)
	for _ in $(seq 30); do
		left=$(kubectl -n "$NS" get "$kinds" -o name 2>/dev/null |
			grep -v -e '^serviceaccount/default$' -e '^configmap/kube-root-ca.crt$' | sort | paste -sd' ')
		[[ $left == "secret/$FULL-secret" ]] && break
		sleep 1
	done
	check "${p}uninstall leaves only the documented" "pods gone after ${pods_gone}s; left: ${left:-nothing} (docs: the chart's hook Secret is kept)" \
		test "$left" = "secret/$FULL-secret"
}

stop_one() {
	local name=$1 i
	for i in "${!pids[@]}"; do
		if [[ $(ps -o args= -p "${pids[i]}" 2>/dev/null) == *"/$name "* ]]; then
			stop_pids "${pids[i]}"
			unset 'pids[i]'
			pids=("${pids[@]}")
			return
		fi
	done
}

stage1_secs=
stage2_secs=
[[ " $STAGES " == *" 1 "* ]] && stage1
if [[ " $STAGES " == *" 2 "* ]]; then
	# shellcheck source=scripts/e2e-k8s-node.sh
	source scripts/e2e-k8s-node.sh
	stage2
fi

say "times: tools ${tools_secs}s, control plane ${cp_secs}s${stage1_secs:+, stage 1 ${stage1_secs}s}${stage2_secs:+, stage 2 ${stage2_secs}s}, total $(secs_since "$t0")s"
pass "times" "tools ${tools_secs}s, control plane ${cp_secs}s${stage1_secs:+, stage 1 ${stage1_secs}s}${stage2_secs:+, stage 2 ${stage2_secs}s}, total $(secs_since "$t0")s"
((failures == 0)) || exit 1
ok=true
