#!/usr/bin/env bash
# k8s-tools.sh builds the cluster that make e2e-k8s runs, from source, into .tools/k8s/ (git-ignored),
# one folder per tool and version, so a second run builds nothing:
#
#   kubernetes-v1.33.13/  kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
#                         (tools/k8s: its own module, because k8s.io/kubernetes needs replaces that
#                         the project's go.mod must never carry)
#   etcd-v3.6.8/          etcd (tools/etcd: a wrapper module around go.etcd.io/etcd/server/v3)
#   kwok-v0.8.0/          kwok + stages.yaml (its "fast" node and pod stages: nodes turn Ready,
#                         pods Running and Ready, Job pods Succeeded)
#   crane-v0.22.1/        crane (images from static binaries, no Docker)
#   crictl-v1.37.0/       crictl (stage 2: clean up the node's pods)
#   images/pause-v1.33.13.tar   the pause image: gcc -static of the pause.c shipped in the
#                         kubernetes module, as an OCI image built with crane
#
#   scripts/k8s-tools.sh control-plane   kubernetes, etcd, kwok (stage 1)
#   scripts/k8s-tools.sh node            the same plus crane, crictl, the pause image (stage 2)
#   scripts/k8s-tools.sh dir             print .tools/k8s
#   scripts/k8s-tools.sh pause-ref       print the pause image's name
#   scripts/k8s-tools.sh image REF ROOTFS ENTRYPOINT USER OUT.tar   an image from a folder (crane)
#
# Versions are exact (the module proxy here is filtered; ../shared/design/TOOLING.md). A folder
# counts as built when it holds its .ok stamp, which records the hash of the inputs that made it.
set -euo pipefail

readonly KUBERNETES_VERSION=v1.33.13
readonly ETCD_VERSION=v3.6.8
readonly KWOK_VERSION=v0.8.0
readonly CRANE_VERSION=v0.22.1
readonly CRICTL_VERSION=v1.37.0
# The sandbox image containerd is told to use; never pulled (imported from the tarball).
readonly PAUSE_IMAGE=registry.k8s.io/pause:e2e-$KUBERNETES_VERSION

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly root
readonly dir="$root/.tools/k8s"

log() { printf 'k8s-tools: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# built DIR KEY is true when DIR was built from inputs hashing to KEY.
built() { [[ -f $1/.ok && $(cat "$1/.ok") == "$2" ]]; }
stamp() { echo "$2" >"$1/.ok"; }
hash_files() { cat "$@" | sha256sum | cut -c1-16; }

kubernetes() {
	local out="$dir/kubernetes-$KUBERNETES_VERSION" key
	key=$(hash_files "$root/tools/k8s/go.mod" "$root/tools/k8s/go.sum")
	built "$out" "$key" && return 0
	log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy $KUBERNETES_VERSION (10-30 min cold on 2 cores)"
	mkdir -p "$out"
	local minor=${KUBERNETES_VERSION#v1.}
	minor=${minor%%.*}
	# Without the stamp the servers report v0.0.0, and helm's Capabilities (kubeVersion checks,
	# the chart's >= 1.30 preStop sleep) would see that.
	local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION"
	ld+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
	ld+=" -X k8s.io/component-base/version.gitTreeState=clean"
	(cd "$root/tools/k8s" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
	"$out/kube-apiserver" --version | grep -q "$KUBERNETES_VERSION" || die "kube-apiserver does not report $KUBERNETES_VERSION"
	stamp "$out" "$key"
}

etcd() {
	local out="$dir/etcd-$ETCD_VERSION" key
	key=$(hash_files "$root/tools/etcd/go.mod" "$root/tools/etcd/go.sum" "$root/tools/etcd/main.go")
	built "$out" "$key" && return 0
	log "building etcd $ETCD_VERSION"
	mkdir -p "$out"
	(cd "$root/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" .)
	stamp "$out" "$key"
}

# go_install NAME VERSION PACKAGE installs one Go command into its own folder.
go_install() {
	local out="$dir/$1-$2"
	built "$out" "$3@$2" && return 0
	log "installing $1 $2"
	mkdir -p "$out"
	GOBIN="$out" CGO_ENABLED=0 go install -trimpath "$3@$2"
	stamp "$out" "$3@$2"
}

kwok() {
	go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
	local out="$dir/kwok-$KWOK_VERSION"
	[[ -s $out/stages.yaml ]] && return 0
	# The kwok binary has no stages of its own (kwokctl embeds these): copy the module's.
	local mod
	mod=$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage
	[[ -d $mod ]] || go mod download "sigs.k8s.io/kwok@$KWOK_VERSION"
	local f
	for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		[[ -f $mod/$f ]] || die "kwok stage $f not found in $mod"
		printf -- '---\n'
		cat "$mod/$f"
	done >"$out/stages.yaml.tmp"
	mv "$out/stages.yaml.tmp" "$out/stages.yaml"
}

# image REF ROOTFS ENTRYPOINT USER OUT writes the OCI image REF as a tarball OUT (for `ctr images
# import`): one layer holding ROOTFS, on an empty base. crane sets the entrypoint and user only on
# a registry's image, so the image passes through a crane registry on a free loopback port, in
# memory, for the few seconds this takes.
image() {
	local ref=$1 rootfs=$2 entry=$3 user=$4 out=$5 crane="$dir/crane-$CRANE_VERSION/crane" work port pid
	work=$(mktemp -d)
	tar --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -C "$rootfs" -cf "$work/layer.tar" .
	port=$(free_port)
	"$crane" registry serve --address "127.0.0.1:$port" >"$work/registry.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break || sleep 0.1; done
	local rc=0
	{
		"$crane" append --oci-empty-base --platform linux/amd64 -f "$work/layer.tar" -t "127.0.0.1:$port/build:latest" &&
			"$crane" mutate "127.0.0.1:$port/build:latest" --entrypoint "$entry" --user "$user" --set-platform linux/amd64 -t "$ref" -o "$work/img.tar"
	} >"$work/crane.log" 2>&1 || rc=$?
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	if ((rc)); then
		cat "$work/crane.log" "$work/registry.log" >&2
		rm -rf "$work"
		die "crane could not build $ref"
	fi
	mv "$work/img.tar" "$out"
	rm -rf "$work"
}

free_port() {
	local p
	while :; do
		p=$((31000 + RANDOM % 1000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
			echo "$p"
			return
		}
	done
}

pause_image() {
	local out="$dir/images" tar
	tar="$out/pause-$KUBERNETES_VERSION.tar"
	[[ -s $tar ]] && return 0
	command -v gcc >/dev/null || die "gcc is needed for the pause image (apt-get install -y gcc libc6-dev)"
	log "building the pause image from k8s.io/kubernetes@$KUBERNETES_VERSION build/pause/linux/pause.c"
	local src work
	src=$(cd "$root/tools/k8s" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
	work=$(mktemp -d)
	mkdir -p "$out" "$work/rootfs"
	gcc -Os -static -DVERSION="$KUBERNETES_VERSION" -o "$work/rootfs/pause" "$src"
	image "$PAUSE_IMAGE" "$work/rootfs" /pause 65535 "$work/img.tar"
	mv "$work/img.tar" "$tar"
	rm -rf "$work"
}

usage() {
	echo "usage: ${0##*/} control-plane | node | dir | pause-ref | image REF ROOTFS ENTRYPOINT USER OUT.tar" >&2
	exit 2
}

main() {
	[[ $# -ge 1 ]] || usage
	if [[ $1 == image ]]; then
		shift
		[[ $# -eq 5 ]] || usage
		image "$@"
		return
	fi
	[[ $# -eq 1 ]] || usage
	case $1 in
	dir) echo "$dir" ;;
	pause-ref) echo "$PAUSE_IMAGE" ;;
	control-plane)
		etcd
		kwok
		kubernetes
		;;
	node)
		etcd
		kwok
		go_install crane "$CRANE_VERSION" github.com/google/go-containerregistry/cmd/crane
		go_install crictl "$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl
		kubernetes
		pause_image
		;;
	*) usage ;;
	esac
}

main "$@"
