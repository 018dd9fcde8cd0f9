#!/usr/bin/env bash
# tools.sh installs the project's pinned developer tools into .tools/bin (git-ignored), so every
# script and CI run uses the same versions and a second run costs nothing.
#
#   scripts/tools.sh GROUP...     install the tools of each group (cached)
#   scripts/tools.sh bin          print the bin directory (for PATH=...)
#   scripts/tools.sh list         print the groups and their pinned tools
#
# Groups: proto (protoc + protoc-gen-go + protoc-gen-go-grpc), lint (staticcheck, dupl),
# golangci-lint, helm, otelcol (the collector of make e2e-otel), all.
#
# Go tools are cached by version: .tools/bin/.versions has one "name version" line per installed
# binary; a binary whose recorded version differs from the pin is reinstalled. protoc is not a Go
# tool: it comes from Debian (protobuf-compiler 3.21.12; the well-known types in
# /usr/include/google/protobuf come from libprotobuf-dev, only a Recommends). Both are installed
# with apt-get when missing and we are root; otherwise the command to run is printed and the
# script fails.
#
# To add a tool: add its pin below, then a group_NAME function that calls go_tool (or a custom
# installer), and mention it in the usage text. Never pin @latest: the module proxy here is
# filtered and its version lists can be stale (see ../shared/design/TOOLING.md).
set -euo pipefail

# Pins. Keep in step with ../shared/design/TOOLING.md and go.mod (protoc-gen-go must match the
# google.golang.org/protobuf version the generated code is compiled against).
readonly PROTOC_VERSION=3.21.12 # Debian protobuf-compiler; checked, not installed by version
readonly PROTOC_GEN_GO_VERSION=v1.36.12
readonly PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
# staticcheck release 2026.2.2 is module version v0.8.2; the filtered proxy refuses the release
# name as a version query (403), so pin the module version (`staticcheck -version` prints both).
readonly STATICCHECK_VERSION=v0.8.2
# dupl finds copied code by token sequence (scripts/lint-dupl.sh runs it).
readonly DUPL_VERSION=v1.1.0
readonly GOLANGCI_LINT_VERSION=v2.15.0
readonly HELM_VERSION=v3.22.0
readonly BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da # golang.org/x/perf has no tags
# The OpenTelemetry Collector builder (ocb); the components it builds are pinned in
# scripts/otelcol/builder-config.yaml.
readonly OTELCOL_BUILDER_VERSION=v0.165.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
readonly TOOLS_BIN="${root}/.tools/bin"
readonly VERSIONS_FILE="${TOOLS_BIN}/.versions"

log() { printf 'tools: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# installed_version NAME prints the version recorded for NAME, or nothing.
installed_version() {
	[[ -f "${VERSIONS_FILE}" ]] || return 0
	awk -v n="$1" '$1 == n { v = $2 } END { if (v != "") print v }' "${VERSIONS_FILE}"
}

# record_version NAME VERSION replaces NAME's line in the versions file. The temp file and rename
# keep the file whole when two scripts install tools at the same time.
record_version() {
	local name=$1 version=$2 tmp
	tmp="$(mktemp "${VERSIONS_FILE}.XXXXXX")"
	{
		if [[ -f "${VERSIONS_FILE}" ]]; then
			awk -v n="${name}" '$1 != n' "${VERSIONS_FILE}"
		fi
		printf '%s %s\n' "${name}" "${version}"
	} >"${tmp}"
	chmod 644 "${tmp}" # mktemp makes it 0600
	mv -f "${tmp}" "${VERSIONS_FILE}"
}

# go_tool NAME PACKAGE VERSION installs PACKAGE@VERSION as .tools/bin/NAME unless that version is
# already there.
go_tool() {
	local name=$1 pkg=$2 version=$3
	if [[ -x "${TOOLS_BIN}/${name}" && "$(installed_version "${name}")" == "${version}" ]]; then
		return 0
	fi
	command -v go >/dev/null || die "go is not on PATH; install Go 1.26 first"
	log "installing ${name} ${version} (${pkg})"
	mkdir -p "${TOOLS_BIN}"
	# Run outside the module so its go.mod and GOFLAGS (-mod=...) do not apply to the tool build.
	(cd / && GOBIN="${TOOLS_BIN}" GOFLAGS= go install "${pkg}@${version}") ||
		die "go install ${pkg}@${version} failed"
	record_version "${name}" "${version}"
}

# ensure_protoc makes sure protoc and the well-known types are present, installing the Debian
# package when we may. A protoc other than the pin still works but stamps another version in
# the generated headers; scripts/proto.sh warns about that.
ensure_protoc() {
	local need=()
	command -v protoc >/dev/null || need+=(protobuf-compiler)
	[[ -f /usr/include/google/protobuf/struct.proto ]] || need+=(libprotobuf-dev)
	if ((${#need[@]} > 0)); then
		local cmd="apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends ${need[*]}"
		if [[ "$(id -u)" != 0 ]]; then
			die "missing ${need[*]}; run as root: ${cmd}"
		fi
		log "installing ${need[*]} with apt-get"
		# The package lists may be missing on a fresh image; update once and retry.
		DEBIAN_FRONTEND=noninteractive ${cmd} >/dev/null ||
			{ apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive ${cmd} >/dev/null; } ||
			die "apt-get could not install ${need[*]}"
	fi
	local got
	got="$(protoc --version | awk '{print $2}')"
	if [[ "${got}" != "${PROTOC_VERSION}" ]]; then
		log "warning: protoc ${got} found, ${PROTOC_VERSION} pinned"
	fi
}

group_proto() {
	ensure_protoc
	go_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "${PROTOC_GEN_GO_VERSION}"
	go_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "${PROTOC_GEN_GO_GRPC_VERSION}"
}

group_lint() {
	go_tool staticcheck honnef.co/go/tools/cmd/staticcheck "${STATICCHECK_VERSION}"
	go_tool dupl github.com/mibk/dupl "${DUPL_VERSION}"
}

group_golangci-lint() {
	# About 60 s cold.
	go_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "${GOLANGCI_LINT_VERSION}"
}

group_helm() {
	# About 80 s cold. Built without the release ldflags, so `helm template`/`helm lint` assume
	# Kubernetes 1.20 unless given --kube-version.
	go_tool helm helm.sh/helm/v3/cmd/helm "${HELM_VERSION}"
}

group_benchstat() {
	go_tool benchstat golang.org/x/perf/cmd/benchstat "${BENCHSTAT_VERSION}"
}

# group_otelcol builds the collector of make e2e-otel as .tools/bin/otelcol-e2e (1–3 min cold),
# again only when the builder pin or scripts/otelcol/builder-config.yaml changes.
group_otelcol() {
	go_tool builder go.opentelemetry.io/collector/cmd/builder "${OTELCOL_BUILDER_VERSION}"
	local manifest="${root}/scripts/otelcol/builder-config.yaml" want
	want="${OTELCOL_BUILDER_VERSION}-$(sha256sum "${manifest}" | cut -c1-12)"
	if [[ -x "${TOOLS_BIN}/otelcol-e2e" && "$(installed_version otelcol-e2e)" == "${want}" ]]; then
		return 0
	fi
	log "building the e2e collector otelcol-e2e (ocb ${OTELCOL_BUILDER_VERSION}, about 1-3 min cold)"
	local dir="${root}/.tools/otelcol-src"
	rm -rf "${dir}"
	mkdir -p "${dir}"
	# ocb writes the sources and their go.mod, then runs `go mod tidy`, which also resolves the
	# test-only imports of fileexporter; the filtered proxy refuses one of them
	# (otlpencodingextension, 403). So let ocb generate, accept that tidy step failing, and build
	# with -mod=mod, which resolves only what the collector itself imports.
	(cd "${dir}" && GOFLAGS= "${TOOLS_BIN}/builder" --config "${manifest}" --skip-compilation >build.log 2>&1) ||
		[[ -f "${dir}/build/go.mod" && -f "${dir}/build/components.go" ]] ||
		die "ocb could not generate the collector; see ${dir}/build.log"
	(cd "${dir}/build" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "${TOOLS_BIN}/otelcol-e2e" .) ||
		die "building the e2e collector failed (sources in ${dir}/build)"
	record_version otelcol-e2e "${want}"
}

group_all() {
	group_proto
	group_lint
	group_golangci-lint
	group_helm
}

usage() {
	cat >&2 <<EOF
usage: scripts/tools.sh GROUP...   install pinned tools into ${TOOLS_BIN}
       scripts/tools.sh bin        print that directory
       scripts/tools.sh list       print groups and pins
groups: proto lint golangci-lint helm otelcol all
EOF
	exit 2
}

list() {
	cat <<EOF
proto          protoc ${PROTOC_VERSION} (apt protobuf-compiler), protoc-gen-go ${PROTOC_GEN_GO_VERSION}, protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION}
lint           staticcheck ${STATICCHECK_VERSION} (release 2026.2.2), dupl ${DUPL_VERSION}
golangci-lint  golangci-lint ${GOLANGCI_LINT_VERSION}
helm           helm ${HELM_VERSION}
otelcol        otelcol-e2e from ocb ${OTELCOL_BUILDER_VERSION} and scripts/otelcol/builder-config.yaml
EOF
}

main() {
	(($# > 0)) || usage
	case "$1" in
	bin)
		printf '%s\n' "${TOOLS_BIN}"
		return 0
		;;
	list)
		list
		return 0
		;;
	-h | --help | help) usage ;;
	esac
	local g
	# Check every name before installing anything, so a typo does not cost a long install first.
	for g in "$@"; do
		declare -F "group_${g}" >/dev/null || {
			log "unknown group ${g}"
			usage
		}
	done
	for g in "$@"; do
		"group_${g}"
	done
}

main "$@"
