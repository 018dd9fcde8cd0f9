#!/usr/bin/env bash
# chart-test.sh checks the deployment artefacts without a cluster, a container engine or network
# access to schema stores:
#
#   image       scripts/image-build-check.sh: the Dockerfile's shape, its .dockerignore context,
#               and the build stage's exact `go build` producing static binaries
#   lint        helm lint --strict with the minimal and the production values
#   defaults    the chart's bare defaults must fail (image and secrets are required)
#   render      helm template --kube-version 1.30.0: minimal, production and a variant
#   k8s schema  every rendered document against the Kubernetes OpenAPI schemas (npm
#               kubernetes-models, pinned in deploy/helm/test/package-lock.json), strict about
#               unknown fields; and the validator must reject deploy/helm/test/invalid/*.yaml
#   content     deploy/helm/test/assert-render.mjs on the minimal and production renders (hook
#               Job, Secret ordering, PDBs, HPAs, securityContext, probes, drain timing, ...),
#               which must also fail on a render with the hardening removed; and the agent
#               CA mount on the minimal (none), production (ConfigMap) and variant (Secret) renders
#   bad values  values.schema.json and the templates' checks reject bad values at render time
#   notes       NOTES.txt renders the next steps (tenant, port-forward, grpcurl)
#   roll        a config change changes the pods' checksum annotation
#
#   scripts/chart-test.sh                    everything
#   CHART_TEST_SKIP_IMAGE=1 scripts/chart-test.sh   without the image build check
#   CHART_TEST_VERBOSE=1 scripts/chart-test.sh      print every passing content check too
#
# Tools: helm (scripts/tools.sh helm, cached in .tools/bin), node >= 20 and npm; the npm packages
# are installed with `npm ci` into .tools/chart-test/<lock hash>/ once and reused.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

readonly KUBE_VERSION=1.30.0
readonly chart=deploy/helm/a2a-connector
readonly testdir=deploy/helm/test
readonly release=a2ac
readonly namespace=a2a

step() { printf '\n== %s\n' "$*" >&2; }
die() {
	printf 'chart-test: %s\n' "$*" >&2
	exit 1
}

# Results for the summary table: "check|result|detail".
results=()
failures=0
pass() { results+=("$1|ok|$2"); }
fail() {
	results+=("$1|FAIL|$2")
	failures=$((failures + 1))
	printf 'chart-test: FAIL %s: %s\n' "$1" "$2" >&2
}

summary() {
	printf '\n%-34s %-6s %s\n' "check" "result" "detail"
	printf '%-34s %-6s %s\n' "----------------------------------" "------" "------------------------------"
	local r name res detail
	for r in "${results[@]}"; do
		IFS='|' read -r name res detail <<<"$r"
		printf '%-34s %-6s %s\n' "$name" "$res" "$detail"
	done
	local passed=0
	for r in "${results[@]}"; do [[ $r == *'|ok|'* ]] && passed=$((passed + 1)); done
	printf '\nchart-test: %d passed, %d failed\n' "$passed" "$failures"
}

tmp="$(mktemp -d "${TMPDIR:-/tmp}/a2ac-chart-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# --- image ------------------------------------------------------------------------------------
if [[ ${CHART_TEST_SKIP_IMAGE:-} == 1 ]]; then
	results+=("image build (static binaries)|skip|CHART_TEST_SKIP_IMAGE=1")
else
	step "image build check"
	if scripts/image-build-check.sh; then
		pass "image build (static binaries)" "Dockerfile shape, .dockerignore context, go build, static ELF"
	else
		fail "image build (static binaries)" "scripts/image-build-check.sh failed (output above)"
	fi
fi

# --- tools ------------------------------------------------------------------------------------
step "tools: helm, node packages"
scripts/tools.sh helm
helm="$(scripts/tools.sh bin)/helm"
command -v node >/dev/null || die "node is not on PATH (apt-get install -y nodejs npm)"
command -v npm >/dev/null || die "npm is not on PATH (apt-get install -y npm)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
((node_major >= 20)) || die "node ${node_major} is too old: the validators need node >= 20"

lock_hash="$(cat "$testdir/package.json" "$testdir/package-lock.json" | sha256sum | cut -c1-16)"
nodedir="$root/.tools/chart-test/$lock_hash"
if [[ ! -f $nodedir/.installed ]]; then
	rm -rf "$nodedir"
	mkdir -p "$nodedir"
	cp "$testdir/package.json" "$testdir/package-lock.json" "$nodedir/"
	# --engine-strict=false: the kubernetes-models packages declare node >= 22 but run on 20.
	(cd "$nodedir" && npm ci --no-audit --no-fund --ignore-scripts --engine-strict=false --loglevel=error) ||
		die "npm ci failed in $nodedir"
	touch "$nodedir/.installed"
fi
# The scripts run from the cache folder so that `import "yaml"` resolves to its node_modules.
cp "$testdir"/*.mjs "$nodedir/"
validate() { node "$nodedir/validate.mjs" --kube-version "$KUBE_VERSION" "$@"; }
assert_render() { node "$nodedir/assert-render.mjs" "$@"; }

# --- lint -------------------------------------------------------------------------------------
for profile in minimal production; do
	step "helm lint --strict ($profile)"
	if "$helm" lint "$chart" --strict --kube-version "$KUBE_VERSION" -f "$testdir/values-$profile.yaml" >"$tmp/lint-$profile.log" 2>&1; then
		pass "helm lint --strict $profile" "$(grep -c '^\[WARNING\]' "$tmp/lint-$profile.log" || true) warnings"
	else
		cat "$tmp/lint-$profile.log" >&2
		fail "helm lint --strict $profile" "see output above"
	fi
done

# --- defaults must fail -----------------------------------------------------------------------
step "bare defaults are refused"
if "$helm" template "$release" "$chart" --kube-version "$KUBE_VERSION" >/dev/null 2>"$tmp/defaults.err"; then
	fail "bare defaults refused" "helm template succeeded without image.repository and secrets"
elif grep -q "image/repository" "$tmp/defaults.err"; then
	pass "bare defaults refused" "image.repository required"
else
	cat "$tmp/defaults.err" >&2
	fail "bare defaults refused" "failed for another reason"
fi

# --- render -------------------------------------------------------------------------------------
render() { # render NAME HELM-ARGS... -> $tmp/NAME.yaml
	local name=$1
	shift
	if "$helm" template "$release" "$chart" --namespace "$namespace" --kube-version "$KUBE_VERSION" "$@" \
		>"$tmp/$name.yaml" 2>"$tmp/$name.err"; then
		pass "helm template $name" "$(grep -c '^kind:' "$tmp/$name.yaml") objects"
		return 0
	fi
	cat "$tmp/$name.err" >&2
	fail "helm template $name" "render failed"
	return 1
}
step "helm template (Kubernetes $KUBE_VERSION)"
rendered=()
render minimal -f "$testdir/values-minimal.yaml" && rendered+=("$tmp/minimal.yaml")
render production -f "$testdir/values-production.yaml" && rendered+=("$tmp/production.yaml")
# No migration hook (so the Secret is an ordinary object), no metrics, a pre-existing
# ServiceAccount, autoscaling on with the chart's default resources, the agent CA bundle from a
# Secret under another key (production takes it from a ConfigMap).
render variant -f "$testdir/values-minimal.yaml" --set migration.enabled=false --set metrics.enabled=false \
	--set serviceAccount.create=false --set serviceAccount.name=platform-workloads \
	--set connector.autoscaling.enabled=true --set consoleApi.pdb.enabled=false \
	--set agentCA.secret=agent-pki --set agentCA.key=bundle.pem &&
	rendered+=("$tmp/variant.yaml")
if [[ -f $tmp/variant.yaml ]]; then
	if grep -q 'helm.sh/hook' "$tmp/variant.yaml" || grep -q 'kind: ServiceAccount' "$tmp/variant.yaml" ||
		grep -q 'A2AC_METRICS_ADDR' "$tmp/variant.yaml" || ! grep -q 'serviceAccountName: platform-workloads' "$tmp/variant.yaml"; then
		fail "variant render content" "hook, ServiceAccount or metrics left in, or the given ServiceAccount not used"
	else
		pass "variant render content" "no hooks, no SA, no metrics, given SA used"
	fi
fi

# --- Kubernetes schemas --------------------------------------------------------------------------
step "Kubernetes schema validation (offline, strict)"
if ((${#rendered[@]} > 0)) && validate "${rendered[@]}" >"$tmp/validate.log" 2>&1; then
	cat "$tmp/validate.log" >&2
	pass "k8s schemas (strict)" "$(tail -n 1 "$tmp/validate.log" | sed 's/ (.*//')"
else
	cat "$tmp/validate.log" >&2 2>/dev/null || true
	fail "k8s schemas (strict)" "see output above"
fi
bad_caught=0 bad_total=0
for f in "$testdir"/invalid/*.yaml; do
	bad_total=$((bad_total + 1))
	if validate "$f" >"$tmp/invalid.log" 2>&1; then
		printf 'chart-test: the validator accepted %s\n' "$f" >&2
	else
		bad_caught=$((bad_caught + 1))
	fi
done
if ((bad_caught == bad_total && bad_total > 0)); then
	pass "validator rejects invalid docs" "${bad_caught}/${bad_total} (type, unknown field, removed API, kind, required)"
else
	fail "validator rejects invalid docs" "${bad_caught}/${bad_total} rejected"
fi

# --- rendered content ----------------------------------------------------------------------------
step "rendered content"
for profile in minimal production variant; do
	[[ -f $tmp/$profile.yaml ]] || continue
	if assert_render "$profile" "$tmp/$profile.yaml" >"$tmp/assert-$profile.log" 2>&1; then
		pass "content $profile" "$(tail -n 1 "$tmp/assert-$profile.log" | sed 's/^[a-z]*: //')"
	else
		fail "content $profile" "$(tail -n 1 "$tmp/assert-$profile.log" | sed 's/^[a-z]*: //')"
	fi
	if [[ ${CHART_TEST_VERBOSE:-} == 1 ]]; then cat "$tmp/assert-$profile.log" >&2; else grep -v '^  ok' "$tmp/assert-$profile.log" >&2 || true; fi
done
# The assertions must bite: the same render without the hardening must fail them.
if [[ -f $tmp/production.yaml ]]; then
	sed -e '/readOnlyRootFilesystem: true/d' -e 's/helm.sh\/hook: pre-install,pre-upgrade$/helm.sh\/hook: post-install/' \
		"$tmp/production.yaml" >"$tmp/weakened.yaml"
	if assert_render production "$tmp/weakened.yaml" >"$tmp/assert-weakened.log" 2>&1; then
		fail "content checks can fail" "a render without readOnlyRootFilesystem and the pre-install hook passed"
	else
		pass "content checks can fail" "weakened render: $(tail -n 1 "$tmp/assert-weakened.log" | sed 's/^[a-z]*: //')"
	fi
	# And the agent CA checks: a writable mount, and a variable that misses the mounted file.
	ca_bit=0
	for weaken in '/readOnly: true$/d' 's|value: "/etc/a2a-connector/agent-ca/ca.crt"|value: "/etc/a2a-connector/agent-ca/ca.pem"|'; do
		sed -e "$weaken" "$tmp/production.yaml" >"$tmp/weakened-ca.yaml"
		if cmp -s "$tmp/production.yaml" "$tmp/weakened-ca.yaml"; then
			printf 'chart-test: sed %s changed nothing in the production render\n' "$weaken" >&2
		elif assert_render production "$tmp/weakened-ca.yaml" >"$tmp/assert-weakened-ca.log" 2>&1; then
			printf 'chart-test: the agent CA checks passed a render weakened by sed %s\n' "$weaken" >&2
		else
			ca_bit=$((ca_bit + 1))
			grep 'FAIL' "$tmp/assert-weakened-ca.log" | sed 's/^/  weakened: /' >&2
		fi
	done
	if ((ca_bit == 2)); then
		pass "agent CA checks can fail" "writable mount, A2AC_AGENT_CA_FILE off the mounted file: both fail"
	else
		fail "agent CA checks can fail" "${ca_bit}/2 weakened renders failed (output above)"
	fi
fi

# --- bad values must fail at render time ---------------------------------------------------------
step "bad values are refused at render time"
# expect_refused LABEL PATTERN HELM-ARGS...: helm template must fail and say PATTERN.
bad_ok=0 bad_n=0 bad_missed=()
expect_refused() {
	local label=$1 pattern=$2
	shift 2
	bad_n=$((bad_n + 1))
	if "$helm" template "$release" "$chart" --kube-version "$KUBE_VERSION" -f "$testdir/values-minimal.yaml" "$@" \
		>/dev/null 2>"$tmp/bad.err"; then
		bad_missed+=("$label (accepted)")
	elif grep -qE -- "$pattern" "$tmp/bad.err"; then
		bad_ok=$((bad_ok + 1))
		printf '  refused  %-38s %s\n' "$label" "$(grep -E -- "$pattern" "$tmp/bad.err" | head -n 1 |
			sed -e 's/^[[:space:]-]*//' -e 's/^Error: execution error at ([^)]*): //' | cut -c1-120)" >&2
	else
		bad_missed+=("$label (wrong message: $(head -c 200 "$tmp/bad.err"))")
	fi
}
expect_refused 'connector.replicaCount: "three"' '/connector/replicaCount.*want integer' --set-string connector.replicaCount=three
expect_refused 'config.logLevel: loud' '/config/logLevel.*must be one of' --set config.logLevel=loud
expect_refused 'config.holdTTL: 10min' '/config/holdTTL.*does not match pattern' --set config.holdTTL=10min
expect_refused 'config.turnTimeout: 0s' '/config/turnTimeout' --set config.turnTimeout=0s
expect_refused 'otel.protocol: http/json' '/otel/protocol.*must be one of' --set otel.protocol=http/json
expect_refused 'otel.endpoint without scheme' '/otel/endpoint.*does not match' --set otel.enabled=true --set otel.endpoint=otel-collector:4317
expect_refused 'otel.enabled without endpoint' '/otel/endpoint' --set otel.enabled=true
expect_refused 'typo conector.replicaCount' "additional properties 'conector'" --set conector.replicaCount=3
expect_refused 'typo connector.probes...periodSecond' "additional properties 'periodSecond'" --set connector.probes.liveness.periodSecond=3
expect_refused 'image.pullPolicy: Sometimes' '/image/pullPolicy' --set image.pullPolicy=Sometimes
expect_refused 'secret.secretKey not 32 bytes b64' '/secret/secretKey' --set secret.secretKey=abc
expect_refused 'secret.databaseUrl missing' 'secret.databaseUrl is required' --set secret.databaseUrl=
expect_refused 'secret.adminToken too short' 'secret.adminToken is 11 characters' --set secret.adminToken=short-token
expect_refused 'grace period <= shutdown timeout' 'terminationGracePeriodSeconds \(20\) must be larger' --set connector.terminationGracePeriodSeconds=20
expect_refused 'grace period <= preStop + drain + shutdown' 'terminationGracePeriodSeconds \(35\) must be larger' --set connector.terminationGracePeriodSeconds=35
expect_refused 'connector.inflightStale: 15sec' '/connector/inflightStale.*does not match pattern' --set-string connector.inflightStale=15sec
expect_refused 'preStop sleep on Kubernetes 1.29' 'needs Kubernetes >= 1.30' --set consoleApi.preStopSleepSeconds=5 --kube-version 1.29.0
expect_refused 'HPA maxReplicas < minReplicas' 'maxReplicas \(1\) is below minReplicas' --set connector.autoscaling.enabled=true --set connector.autoscaling.minReplicas=3 --set connector.autoscaling.maxReplicas=1
expect_refused 'PDB with neither bound' 'set minAvailable or maxUnavailable' --set connector.pdb.maxUnavailable=null
expect_refused 'agentCA: both configMap and secret' "/agentCA/secret.*must be ''" --set agentCA.configMap=agent-ca --set agentCA.secret=agent-pki
expect_refused 'agentCA.key empty' '/agentCA/key.*minLength' --set agentCA.configMap=agent-ca --set agentCA.key=
expect_refused 'agentCA.key a path' '/agentCA/key.*does not match pattern' --set agentCA.configMap=agent-ca --set agentCA.key=certs/ca.crt
if ((bad_ok == bad_n)); then
	pass "bad values refused" "${bad_ok}/${bad_n} (schema types, enums, patterns, typos, required)"
else
	printf 'chart-test: not refused as expected: %s\n' "${bad_missed[@]}" >&2
	fail "bad values refused" "${bad_ok}/${bad_n}; missed: ${bad_missed[*]}"
fi

# --- env names ---------------------------------------------------------------------------------
# Every A2AC_* variable the chart sets must be one internal/config reads: a renamed setting
# would otherwise be silently ignored by the binaries.
step "environment names match internal/config"
known="$(grep -oE '"(A2AC_[A-Z0-9_]+|DATABASE_URL)"' internal/config/config.go | tr -d '"' | sort -u)"
used="$(cat "${rendered[@]}" | grep -oE '(^|[[:space:]-]|name: )(A2AC_[A-Z0-9_]+|DATABASE_URL):?' |
	grep -oE '(A2AC_[A-Z0-9_]+|DATABASE_URL)' | sort -u)"
unknown="$(comm -13 <(printf '%s\n' "$known") <(printf '%s\n' "$used"))"
if [[ -z $unknown && -n $used ]]; then
	pass "env names match internal/config" "$(wc -l <<<"$used") A2AC_*/DATABASE_URL names set, all read by config.Load"
else
	fail "env names match internal/config" "not read by internal/config: $(tr '\n' ' ' <<<"$unknown")"
fi

# --- NOTES.txt ---------------------------------------------------------------------------------------
# helm template does not render NOTES.txt, and install --dry-run wants a cluster: render it through
# a test-only template in a copy of the chart.
step "NOTES.txt"
cp -r "$chart" "$tmp/chart-notes"
printf 'notes: |\n{{ include "a2a-connector/templates/NOTES.txt" . | indent 2 }}\n' >"$tmp/chart-notes/templates/zz-notes.yaml"
notes_ok=0
for profile in minimal production; do
	if "$helm" template "$release" "$tmp/chart-notes" --namespace "$namespace" --kube-version "$KUBE_VERSION" \
		-f "$testdir/values-$profile.yaml" --show-only templates/zz-notes.yaml >"$tmp/notes-$profile.txt" 2>&1 &&
		grep -q 'POST http://127.0.0.1:8080/v1/tenants' "$tmp/notes-$profile.txt" &&
		grep -q 'grpcurl -plaintext 127.0.0.1:9090 grpc.health.v1.Health/Check' "$tmp/notes-$profile.txt" &&
		grep -q 'port-forward svc/' "$tmp/notes-$profile.txt"; then
		notes_ok=$((notes_ok + 1))
	else
		cat "$tmp/notes-$profile.txt" >&2
	fi
done
if ((notes_ok == 2)); then
	pass "NOTES.txt renders" "tenant creation, port-forward, grpcurl health (minimal, production)"
else
	fail "NOTES.txt renders" "missing next steps (output above)"
fi

# --- config change rolls the pods ----------------------------------------------------------------
step "config change rolls the pods"
checksum() { "$helm" template "$release" "$chart" --kube-version "$KUBE_VERSION" -f "$testdir/values-minimal.yaml" "$@" --show-only templates/connector-deployment.yaml | grep 'checksum/config'; }
if [[ "$(checksum)" != "$(checksum --set config.logLevel=debug)" && "$(checksum)" == "$(checksum)" ]]; then
	pass "config change rolls pods" "checksum/config follows the ConfigMap"
else
	fail "config change rolls pods" "checksum/config did not change with config.logLevel"
fi

# --- the connector's preStop sleep on a cluster without the sleep action ---------------------------
step "connector drain on Kubernetes 1.29"
# No preStop there (the image has no shell): the sleep is added to A2AC_DRAIN_DELAY, so the pod
# still serves as long before its listener closes, and the grace period is the same.
old_render=$("$helm" template "$release" "$chart" --kube-version 1.29.0 -f "$testdir/values-minimal.yaml" --show-only templates/connector-deployment.yaml 2>&1) || true
if grep -q 'preStop:' <<<"$old_render"; then
	fail "connector drain on 1.29" "a preStop sleep was rendered for a cluster without the sleep action"
elif grep -A1 'name: A2AC_DRAIN_DELAY' <<<"$old_render" | grep -q 'value: "10s"' &&
	grep -q 'terminationGracePeriodSeconds: 50' <<<"$old_render"; then
	pass "connector drain on 1.29" "no preStop; A2AC_DRAIN_DELAY 10s (sleep folded in), grace 50 s"
else
	fail "connector drain on 1.29" "want A2AC_DRAIN_DELAY \"10s\" and grace 50: $(grep -A1 -e A2AC_DRAIN_DELAY -e terminationGrace <<<"$old_render" | tr '\n' ' ')"
fi

summary
((failures == 0))
