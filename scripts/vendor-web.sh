#!/usr/bin/env bash
# vendor-web.sh refreshes the charting library vendored into the web console
# (internal/console/web/vendor/): uPlot's minified browser build, its style sheet and its
# license, from the npm package at the pinned version. The page has no build step and loads
# nothing from another origin (its Content-Security-Policy forbids it), so the files are
# committed; run this only to change the version, then commit the result.
#
#   scripts/vendor-web.sh            fetch UPLOT_VERSION and copy its files
#   scripts/vendor-web.sh check      fail when the committed files differ from the package
set -euo pipefail
UPLOT_VERSION=1.6.32
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/internal/console/web/vendor"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "uplot@$UPLOT_VERSION" >/dev/null && tar xzf "uplot-$UPLOT_VERSION.tgz")
pkg="$tmp/package"
declare -A files=(
	[uPlot.iife.min.js]="$pkg/dist/uPlot.iife.min.js"
	[uPlot.min.css]="$pkg/dist/uPlot.min.css"
	[uPlot.LICENSE]="$pkg/LICENSE"
)
if [[ ${1:-} == check ]]; then
	for name in "${!files[@]}"; do
		cmp -s "${files[$name]}" "$dest/$name" || { echo "vendor-web: $name differs from uplot@$UPLOT_VERSION; run scripts/vendor-web.sh" >&2; exit 1; }
	done
	exit 0
fi
mkdir -p "$dest"
for name in "${!files[@]}"; do
	cp "${files[$name]}" "$dest/$name"
done
echo "vendored uplot@$UPLOT_VERSION into ${dest#"$root"/}"
