#!/usr/bin/env bash
# proto.sh regenerates the committed Go code of the gRPC API (api/proto/**/*.pb.go) with protoc
# and the pinned plugins from scripts/tools.sh, so the generated code never depends on whatever
# happens to be on PATH.
#
#   scripts/proto.sh          regenerate in place (then review and commit the *.pb.go files)
#   scripts/proto.sh check    regenerate into a temp dir and fail if the committed files differ
#
# Import root is api/proto (so files are registered as "connector/v1/connector.proto"); the
# well-known types (google/protobuf/*.proto) come from /usr/include. Only *.pb.go files are
# generated or compared: hand-written files beside them (doc.go) are left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
readonly proto_root="${root}/api/proto"
readonly wkt_include=/usr/include

log() { printf 'proto: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# generate OUT writes the *.pb.go of every .proto under api/proto into OUT, mirroring the
# source tree (paths=source_relative).
generate() {
	local out=$1 bin
	bin="$("${root}/scripts/tools.sh" bin)"
	local files=()
	mapfile -t files < <(cd "${proto_root}" && find . -name '*.proto' -printf '%P\n' | LC_ALL=C sort)
	((${#files[@]} > 0)) || die "no .proto files under ${proto_root}"
	[[ -f "${wkt_include}/google/protobuf/struct.proto" ]] ||
		die "well-known types missing in ${wkt_include}/google/protobuf; run scripts/tools.sh proto"
	(
		cd "${proto_root}"
		protoc \
			-I . -I "${wkt_include}" \
			--plugin=protoc-gen-go="${bin}/protoc-gen-go" \
			--plugin=protoc-gen-go-grpc="${bin}/protoc-gen-go-grpc" \
			--go_out="${out}" --go_opt=paths=source_relative \
			--go-grpc_out="${out}" --go-grpc_opt=paths=source_relative \
			"${files[@]}"
	) || die "protoc failed"
}

# copy_pb SRC DST copies every *.pb.go under SRC to the same relative path under DST.
copy_pb() {
	local src=$1 dst=$2 f
	while IFS= read -r f; do
		mkdir -p "${dst}/$(dirname "${f}")"
		cp "${src}/${f}" "${dst}/${f}"
	done < <(cd "${src}" && find . -name '*.pb.go' -printf '%P\n')
}

main() {
	local mode=${1:-generate}
	case "${mode}" in
	generate | check) ;;
	*)
		printf 'usage: scripts/proto.sh [check]\n' >&2
		exit 2
		;;
	esac

	"${root}/scripts/tools.sh" proto

	local tmp
	tmp="$(mktemp -d)"
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '${tmp}'" EXIT
	mkdir -p "${tmp}/generated" "${tmp}/committed"
	generate "${tmp}/generated"

	if [[ "${mode}" == check ]]; then
		copy_pb "${proto_root}" "${tmp}/committed"
		# The header line naming the protoc version is ignored: a machine with another protoc
		# produces the same code, and tools.sh already warns about the version.
		if ! (cd "${tmp}" && diff -ru -I '^//[[:space:]]*protoc[[:space:]]' \
			committed generated >diff); then
			head -n 60 "${tmp}/diff" >&2
			die "generated code in api/proto is stale (or was edited by hand): run scripts/proto.sh and commit the result"
		fi
		log "generated code is up to date"
		return 0
	fi

	# Replace every *.pb.go, so code of a deleted .proto does not linger.
	find "${proto_root}" -name '*.pb.go' -delete
	copy_pb "${tmp}/generated" "${proto_root}"
	log "regenerated $(cd "${proto_root}" && find . -name '*.pb.go' | wc -l) files under api/proto"
}

main "$@"
