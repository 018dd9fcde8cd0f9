# shellcheck shell=bash
# e2e-k8s-node.sh is stage 2 of scripts/e2e-k8s.sh, which sources it (it uses that script's
# helpers and control plane): a real node, and the chart on it against real Postgres, a real
# agent and a real collector. Read scripts/e2e-k8s.sh first.

readonly NODE=e2e-node

# node_net picks a /24 of 10.199.0.0/16 that no address or route of the machine touches, and
# makes the bridge the pods will sit on, with the gateway address everything pods talk to.
node_net() {
	local n used
	used=$(ip -o addr; ip route; ip link)
	for _ in $(seq 50); do
		n=$((1 + RANDOM % 250))
		[[ $used == *"10.199.$n."* || $used == *"a2ak$n"* ]] && continue
		break
	done
	SUBNET=10.199.$n.0/24 GW=10.199.$n.1 BR=a2ak$n
	ip link add "$BR" type bridge
	cleanup_fns+=(net_down)
	ip addr add "$GW/24" dev "$BR"
	ip link set "$BR" up
	# Service addresses go to the bridge even when kube-proxy has no rule for them, never to the
	# machine's default route.
	ip route add "$SERVICE_CIDR" dev "$BR"
	# Nothing that enters from the bridge leaves by another interface, nor the other way round
	# (ip_forward is off here anyway; this holds if it is on).
	nft -f - <<EOF
table inet $BR {
	chain forward {
		type filter hook forward priority -10; policy accept;
		iifname "$BR" oifname != "$BR" drop
		oifname "$BR" iifname != "$BR" drop
	}
}
EOF
}
net_down() {
	nft delete table inet "$BR" 2>/dev/null
	ip link del "$BR" 2>/dev/null
}

# The kernel settings the kubelet changes on start (setupKernelTunables), put back on exit.
readonly KUBELET_SYSCTLS="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes"
save_sysctls() {
	local k
	SAVED_SYSCTLS=()
	for k in $KUBELET_SYSCTLS; do
		SAVED_SYSCTLS+=("$k=$(cat "/proc/sys/$k")")
	done
	cleanup_fns+=(restore_sysctls)
}
restore_sysctls() {
	local kv
	for kv in "${SAVED_SYSCTLS[@]}"; do
		echo "${kv#*=}" >"/proc/sys/${kv%%=*}"
	done
}

node_up() {
	local t
	t=$(date +%s)
	mkdir -p "$run/containerd" "$run/cni/net.d" "$run/kubelet" "$run/bin"
	# Pieces from Debian.
	local missing=()
	command -v containerd >/dev/null || missing+=(containerd)
	command -v runc >/dev/null || missing+=(runc)
	[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
	command -v nft >/dev/null || missing+=(nftables)
	if ((${#missing[@]})); then
		say "installing ${missing[*]} (apt-get)"
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	grep -q ' /sys/fs/cgroup/memory cgroup ' /proc/mounts || die "stage 2 expects cgroup v1 (the kubelet runs with cgroupDriver cgroupfs)"
	[[ ! -e /sys/fs/cgroup/memory/kubepods ]] || die "/sys/fs/cgroup/memory/kubepods exists: another kubelet runs here"
	! nft list table ip kube-proxy >/dev/null 2>&1 || die "an nftables table ip kube-proxy exists: another kube-proxy runs here"

	node_net
	save_sysctls
	# containerd's shims keep runc state, fifos and sockets under /run/containerd whatever the
	# configuration says: remove it afterwards unless it was there before.
	[[ -e /run/containerd ]] && RUN_CONTAINERD_KEEP=true || RUN_CONTAINERD_KEEP=false
	# The kubelet runs without /usr/sbin on its PATH, so that it finds no iptables and leaves the
	# machine's filter table alone (it would add KUBE-FIREWALL jumps to INPUT and OUTPUT).
	# kube-proxy (nftables mode) needs only nft.
	ln -s "$(command -v nft)" "$run/bin/nft"

	local sock=$run/containerd/containerd.sock pause
	pause=$(scripts/k8s-tools.sh pause-ref)
	cat >"$run/containerd/config.toml" <<EOF
version = 2
root = "$run/containerd/root"
state = "$run/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$run/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause"
  # This machine withholds CAP_SYS_RESOURCE even from root: the pause container's default
  # oom_score_adj of -998 cannot be set (runc fails "can't get final child's PID from pipe").
  # Restricted, no container gets a lower score than containerd's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$run/cni/net.d"
EOF
	cat >"$run/cni/net.d/10-$BR.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "$BR",
  "plugins": [{
    "type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$run/cni/ipam",
             "ranges": [[{"subnet": "$SUBNET", "rangeStart": "${GW%.1}.10", "gateway": "$GW"}]]}
  }]
}
EOF
	containerd --config "$run/containerd/config.toml" >"$run/logs/containerd.log" 2>&1 &
	node_pids+=($!)
	cleanup_fns+=(node_down)
	wait_for containerd 30 ctr --address "$sock" version
	CTR=(ctr --address "$sock" -n k8s.io)
	"${CTR[@]}" images import "$tools/images/pause-v1.33.13.tar" >/dev/null
	"${CTR[@]}" images import "$run/app-image.tar" >/dev/null

	local kport hport
	kport=$(free_port)
	hport=$(free_port)
	cat >"$run/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
# On the bridge's address only, for the apiserver (kubectl logs and exec while debugging).
address: $GW
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDir: $run/pod-logs
serializeImagePulls: false
# The disk is shared with other work on this machine: do not evict for its use.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: ""
EOF
	PATH=/usr/local/bin:/usr/bin:/bin "$K8S_BIN/kubelet" --config "$run/kubelet/config.yaml" --kubeconfig "$KUBECONFIG" \
		--root-dir "$run/kubelet/root" --cert-dir "$run/kubelet/pki" --hostname-override "$NODE" --node-ip "$GW" \
		>"$run/logs/kubelet.log" 2>&1 &
	node_pids+=($!)
	wait_for "node $NODE Ready" 120 sh -c "kubectl get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"

	cat >"$run/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $KUBECONFIG}
mode: nftables
hostnameOverride: $NODE
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$(free_port)
metricsBindAddress: 127.0.0.1:$(free_port)
clusterCIDR: $SUBNET
detectLocalMode: ClusterCIDR
nodePortAddresses: ["$GW/32"]
# Leave the machine's conntrack settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}
nftables: {syncPeriod: 30s, minSyncPeriod: 0s}
EOF
	PATH=$run/bin:/usr/local/bin:/usr/bin:/bin "$K8S_BIN/kube-proxy" --config "$run/kube-proxy.yaml" \
		>"$run/logs/kube-proxy.log" 2>&1 &
	node_pids+=($!)
	wait_for "kube-proxy's nftables table" 60 nft list table ip kube-proxy
	node_up=true
	pass "real node Ready" "kubelet + kube-proxy (nftables) v1.33.13, containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), CNI bridge $BR $SUBNET; ${NODE} Ready in $(secs_since "$t")s"
}

# node_down stops the node and removes everything it made: pods (their network namespaces,
# veths and addresses go with them), mounts, cgroups, nftables tables.
node_down() {
	local sock=$run/containerd/containerd.sock p i
	if ((${#node_pids[@]} >= 3)); then
		stop_pids "${node_pids[2]}" # kube-proxy
	fi
	nft delete table ip kube-proxy 2>/dev/null
	nft delete table ip6 kube-proxy 2>/dev/null
	if ((${#node_pids[@]} >= 2)); then
		stop_pids "${node_pids[1]}" # kubelet
	fi
	if [[ -S $sock ]]; then
		timeout 60 "$tools/crictl-v1.37.0/crictl" --runtime-endpoint "unix://$sock" rmp -fa >/dev/null 2>&1
	fi
	stop_pids "${node_pids[0]}" # containerd
	# Shims of our containerd outlive it: find them by its socket, which only they name.
	for p in $(ps -eo pid=,args= | awk -v s="-address $sock" 'index($0, s) { print $1 }'); do
		kill -KILL "$p" 2>/dev/null
	done
	# Mounts under the run folder, deepest first.
	for i in 1 2 3; do
		awk -v r="$run/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r p; do
			umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null
		done
	done
	# The kubelet's cgroups (cgroupfs driver): kubepods in every hierarchy, leaves first.
	for p in /sys/fs/cgroup/*/kubepods; do
		[[ -d $p ]] && find "$p" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	$RUN_CONTAINERD_KEEP || rm -rf /run/containerd
	node_pids=()
}

app_image() {
	local t rootfs tag
	t=$(date +%s)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/ ./cmd/connector ./cmd/console-api ./examples/demo-agent
	tag=e2e-$(cat bin/connector bin/console-api | sha256sum | cut -c1-12)
	rootfs=$run/image-rootfs
	mkdir -p "$rootfs/usr/local/bin" "$rootfs/tmp"
	chmod 1777 "$rootfs/tmp"
	cp bin/connector bin/console-api "$rootfs/usr/local/bin/"
	APP_REPO=registry.local/a2a-connector APP_TAG=$tag
	scripts/k8s-tools.sh image "$APP_REPO:$APP_TAG" "$rootfs" /usr/local/bin/connector 65532:65532 "$run/app-image.tar"
	rm -rf "$rootfs"
	go test -c -tags e2ek8s -o "$run/e2ek8s.test" ./internal/e2ek8s
	pass "image from the static binaries" "$APP_REPO:$APP_TAG, $(du -h "$run/app-image.tar" | cut -f1), crane --oci-empty-base, in $(secs_since "$t")s"
}

stage2() {
	[[ $(id -u) -eq 0 ]] || die "stage 2 needs root (a node: containerd, cgroups, a bridge); E2E_K8S_STAGES=1 runs stage 1 only"
	say "stage 2: a real node"
	local t s out
	t=$(date +%s)
	app_image
	node_up
	# The namespace may still be going away after stage 1: start afresh.
	kubectl delete namespace "$NS" --wait=true --timeout=120s >/dev/null 2>&1 || true
	kubectl create namespace "$NS" >/dev/null
	kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted \
		pod-security.kubernetes.io/enforce-version=latest >/dev/null

	# What pods talk to, all on the bridge's own address.
	scripts/tools.sh otelcol >/dev/null
	local otelcol pgdir pgport otlp_port demo_port
	otelcol="$(scripts/tools.sh bin)/otelcol-e2e"
	otlp_port=$(free_port)
	mkdir -p "$run/otel"
	cat >"$run/otelcol.yaml" <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: $GW:$otlp_port
exporters:
  file/traces:
    path: $run/otel/traces.jsonl
    flush_interval: 200ms
  file/metrics:
    path: $run/otel/metrics.jsonl
    flush_interval: 1s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/traces]
    metrics:
      receivers: [otlp]
      exporters: [file/metrics]
EOF
	start otelcol "$otelcol" --config "$run/otelcol.yaml"
	wait_for collector 30 tcp_open "$GW" "$otlp_port"
	pgdir=$(mktemp -d "$(scripts/postgres.sh home)/e2e-k8s.XXXXXX")
	PG_STOP_DIR=$pgdir
	cleanup_fns+=(pg_down)
	PG_LISTEN_EXTRA=$GW PG_TRUST_CIDR=$SUBNET scripts/postgres.sh start "$pgdir" 2>"$run/logs/postgres-start.log"
	pgport=$(cat "$pgdir/port")
	scripts/postgres.sh createdb "$pgdir" a2ac 2>/dev/null
	demo_port=$(free_port)
	local secret api_key
	secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
	api_key="apikey-$secret"
	DEMO_AGENT_API_KEY=$api_key start demo-agent bin/demo-agent -addr "$GW:$demo_port"
	wait_for "demo agent" 30 tcp_open "$GW" "$demo_port"

	local admin values
	admin="admin-$secret-token"
	values=(-f deploy/helm/test/values-minimal.yaml
		--set "image.repository=$APP_REPO" --set "image.tag=$APP_TAG" --set image.pullPolicy=Never
		--set "secret.databaseUrl=postgres://postgres@$GW:$pgport/a2ac?sslmode=disable&pool_max_conns=4"
		--set "secret.secretKey=$(head -c 32 /dev/urandom | base64 | tr -d '\n')" --set "secret.adminToken=$admin"
		--set config.allowInsecureHTTP=true --set "config.allowedCIDRs={$GW/32}"
		--set otel.enabled=true --set "otel.endpoint=http://$GW:$otlp_port" --set otel.protocol=grpc
		--set consoleApi.replicaCount=1)
	local rv0
	rv0=$(last_rv)
	s=$(date +%s)
	if out=$("$HELM" install "$RELEASE" "$CHART" -n "$NS" "${values[@]}" --wait --timeout 5m 2>&1); then
		pass "node: helm install --wait" "pods Ready on $NODE in $(secs_since "$s")s (real gRPC and HTTP probes)"
		warnings "node: helm install" "$out"
	else
		fail "node: helm install --wait" "$(tail -1 <<<"$out")"
		kubectl -n "$NS" get pods -o wide >&2
		return
	fi
	check_hooks "node: install" "$rv0"
	local tables
	tables=$(psql -h "$GW" -p "$pgport" -U postgres -d a2ac -Atc "select count(*) from information_schema.tables where table_schema = 'public'" 2>&1)
	check "node: the hook Job migrated" "$tables tables in the empty database a2ac, made by the Job's pod (console-api migrate)" \
		test "$tables" -gt 3

	# A turn through the Services (kube-proxy), from a traced client.
	local cip kip
	cip=$(kubectl -n "$NS" get svc "$FULL-connector" -o jsonpath='{.spec.clusterIP}')
	kip=$(kubectl -n "$NS" get svc "$FULL-console-api" -o jsonpath='{.spec.clusterIP}')
	export E2E_CONSOLE_URL=http://$kip:8080 E2E_ADMIN_TOKEN=$admin E2E_GRPC_ADDR=$cip:9090
	export E2E_CARD_URL=http://$GW:$demo_port/.well-known/agent.json E2E_API_KEY=$api_key
	export E2E_USER_MARKER=marker-$secret E2E_STATE=$run/engine-state.json
	export E2E_STOP_FILE=$run/stop-trickle E2E_TRICKLE_OUT=$run/trickle.json
	export OTEL_EXPORTER_OTLP_ENDPOINT=http://$GW:$otlp_port OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_BSP_SCHEDULE_DELAY=200
	if "$run/e2ek8s.test" -test.run '^TestTurn$' -test.v >"$run/logs/turn.log" 2>&1; then
		pass "node: turn through the Services" "tenant + agent via Service $FULL-console-api ($kip), HandleTurn via Service $FULL-connector ($cip) -> demo agent: COMPLETED, $(jq .chunks "$E2E_STATE") text chunks streamed"
	else
		fail "node: turn through the Services" "$(grep -m1 -E 'engine_test|FAIL|Error' "$run/logs/turn.log")"
		return
	fi

	# The pods' spans reach the collector, with their Kubernetes resource attributes.
	local trace found
	trace=$(jq -r .traceId "$E2E_STATE")
	for _ in $(seq 60); do
		found=$(jq -r --arg t "$trace" '.resourceSpans[] | select(any(.scopeSpans[].spans[]; .traceId == $t)) |
			[.resource.attributes[] | {(.key): .value.stringValue}] | add | "\(.["service.name"])@\(.["k8s.pod.name"] // "-")"' \
			"$run/otel/traces.jsonl" 2>/dev/null | sort -u | paste -sd' ')
		[[ $found == *"a2a-connector@$FULL-connector-"* ]] && break
		sleep 1
	done
	check "node: pods' traces reach the collector" "trace $trace: ${found:-none}" \
		grep -q "a2a-connector@$FULL-connector-" <<<"$found"

	# A trickle of turns while the connector restarts: none may fail. Then the PDB: with one
	# connector pod evicted and its replacement not Ready yet, a second eviction is refused.
	rm -f "$E2E_STOP_FILE"
	"$run/e2ek8s.test" -test.run '^TestTrickle$' -test.v >"$run/logs/trickle.log" 2>&1 &
	local trickle=$!
	pids+=("$trickle")
	sleep 5
	local old_pods rs_secs
	old_pods=$(kubectl -n "$NS" get pods -l app.kubernetes.io/component=connector -o name | sort | paste -sd' ')
	# Follow the old pods' logs to their end (through the apiserver and the kubelet): which turns
	# they finished after the restart began, and after their SIGTERM.
	local p
	for p in $old_pods; do
		kubectl -n "$NS" logs -f "$p" >"$run/logs/old-${p#pod/}.log" 2>&1 &
		pids+=($!)
	done
	sleep 1
	s=$(date +%s)
	kubectl -n "$NS" rollout restart "deployment/$FULL-connector" >/dev/null
	if kubectl -n "$NS" rollout status "deployment/$FULL-connector" --timeout 5m >/dev/null 2>&1; then
		rs_secs=$(secs_since "$s")
	else
		rs_secs="not done in 5 min"
	fi
	# The last old pod is still draining when the rollout reports done: wait for it to go.
	local gone
	for _ in $(seq 90); do
		[[ -z $(kubectl -n "$NS" get $old_pods --ignore-not-found -o name 2>/dev/null) ]] && break
		sleep 1
	done
	gone=$(secs_since "$s")
	local served drained
	served=$(for p in "$run"/logs/old-*.log; do
		jq -R -n --argjson t "$s" '[inputs | fromjson? | select(.msg == "turn" and .outcome == "COMPLETED" and
			(.time | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) >= $t)] | length' "$p"
	done | jq -s add)
	drained=$(awk 'FNR == 1 { s = 0 } /"msg":"shutting down"/ { s = 1 } s && /"msg":"turn"/ && /"outcome":"COMPLETED"/ { n++ } END { print n + 0 }' "$run"/logs/old-*.log)
	local evict
	evict=$(pdb_check)
	sleep 3
	touch "$E2E_STOP_FILE"
	wait "$trickle"
	local trc=$?
	local rep
	rep=$(cat "$E2E_TRICKLE_OUT" 2>/dev/null || echo '{}')
	if ((trc == 0)); then
		pass "node: rollout restart under a trickle" "rollout in ${rs_secs}s, the old pods gone after ${gone}s (preStop 5 s + drain 5 s + in-flight turns) having completed ${served:-?} turns since the restart, $drained of them after their SIGTERM; $(jq -r '"\(.completed)/\(.sent) turns completed, \(.failed) failed, over \(.seconds | floor)s"' <<<"$rep")"
	else
		fail "node: rollout restart under a trickle" "rollout in ${rs_secs}s; $(jq -c . <<<"$rep")"
	fi
	[[ -n $evict ]] && results+=("$evict")

	# For whoever reads a failed run: the namespace's events and the pods' logs so far.
	kubectl -n "$NS" get events --sort-by=.lastTimestamp >"$run/logs/events-$NS.txt" 2>&1 || true
	cp -r "$run/pod-logs" "$run/logs/" 2>/dev/null || true
	check_uninstall "node: "
	stage2_secs=$(secs_since "$t")
}

# pdb_check evicts one connector pod through the Eviction API, then at once a second: the
# PodDisruptionBudget (maxUnavailable 1) must refuse the second while the first's replacement
# is not Ready. Prints a result line for the table.
pdb_check() {
	local p1 p2 out1 out2
	read -r p1 p2 < <(kubectl -n "$NS" get pods -l app.kubernetes.io/component=connector \
		--field-selector=status.phase=Running -o jsonpath='{.items[*].metadata.name}')
	[[ -n $p2 ]] || {
		echo "node: PodDisruptionBudget|FAIL|fewer than 2 running connector pods"
		return
	}
	evict() {
		kubectl create --raw "/api/v1/namespaces/$NS/pods/$1/eviction" -f - 2>&1 <<EOF
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "$1", "namespace": "$NS"}}
EOF
	}
	out1=$(evict "$p1") && out2=$(evict "$p2")
	local rc=$?
	if [[ -n $out1 && $out2 == *"disruption budget"* ]]; then
		echo "node: PodDisruptionBudget|ok|first eviction accepted, the second refused at once: $(grep -o 'Cannot evict pod as it would violate the pod.s disruption budget' <<<"$out2" | head -1)"
	else
		echo "node: PodDisruptionBudget|FAIL|first: ${out1:0:80}; second (rc $rc): ${out2:0:120}"
	fi
}

pg_down() {
	scripts/postgres.sh stop "$PG_STOP_DIR" >/dev/null 2>&1
	rm -rf "$PG_STOP_DIR"
}
