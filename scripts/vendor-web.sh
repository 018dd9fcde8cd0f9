#!/usr/bin/env bash
# vendor-web.sh copies uPlot, the chart library of the console's agent health card, pinned and
# checked, into the console's embedded assets (internal/console/web/uplot.iife.min.js and
# uplot.min.css; its license and version in internal/console/third_party/uplot/). The page loads
# nothing from another origin (its Content-Security-Policy forbids it), so the files are committed.
#
#   scripts/vendor-web.sh        (needs npm and the npm registry; run it only to change versions)
#
# To move to another uPlot version: change VERSION, run the script once with SHA256= to see the
# new digests, review the release notes, put the digests here and run it again.
set -euo pipefail

VERSION=1.6.32
# sha256 of dist/uPlot.iife.min.js and of dist/uPlot.min.css.
SHA256=${SHA256-19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null)
tar -xzf "$tmp/uplot-$VERSION.tgz" -C "$tmp" package/LICENSE package/dist/uPlot.iife.min.js package/dist/uPlot.min.css
got="$(sha256sum "$tmp/package/dist/uPlot.iife.min.js" | cut -d' ' -f1) $(sha256sum "$tmp/package/dist/uPlot.min.css" | cut -d' ' -f1)"
if [[ "$got" != "$SHA256" ]]; then
	echo "vendor-web: uplot@$VERSION files have sha256 $got, want ${SHA256:-(none given)}" >&2
	exit 1
fi
cp "$tmp/package/dist/uPlot.iife.min.js" "$root/internal/console/web/uplot.iife.min.js"
cp "$tmp/package/dist/uPlot.min.css" "$root/internal/console/web/uplot.min.css"
mkdir -p "$root/internal/console/third_party/uplot"
cp "$tmp/package/LICENSE" "$root/internal/console/third_party/uplot/LICENSE"
echo "$VERSION" >"$root/internal/console/third_party/uplot/VERSION"
echo "vendor-web: uplot@$VERSION into internal/console/web/uplot.iife.min.js and uplot.min.css"
