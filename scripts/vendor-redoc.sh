#!/usr/bin/env bash
# vendor-redoc.sh copies the Redoc standalone bundle, pinned and checked, into the console's
# embedded assets, where /api-docs loads it to render internal/console/openapi.json in the
# browser with nothing fetched from another origin (works offline).
#
#   scripts/vendor-redoc.sh        (needs npm and the npm registry; run it only to change versions)
#
# To move to another Redoc version: change VERSION, run the script once with SHA256= to see the
# new digest, review the release notes, put the digest here and run it again.
set -euo pipefail

VERSION=2.5.1
SHA256=${SHA256-2d8d13e94b5a21011cc6f8260d87ca475d0f6f2faed16dd12e7394dfa3bb05b8}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "redoc@$VERSION" >/dev/null)
tar -xzf "$tmp/redoc-$VERSION.tgz" -C "$tmp" \
	package/LICENSE package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt
bundle="$tmp/package/bundles/redoc.standalone.js"
got=$(sha256sum "$bundle" | cut -d' ' -f1)
if [[ "$got" != "$SHA256" ]]; then
	echo "vendor-redoc: redoc@$VERSION bundle has sha256 $got, want ${SHA256:-(none given)}" >&2
	exit 1
fi
cp "$bundle" "$root/internal/console/web/redoc.standalone.js"
cp "$tmp/package/LICENSE" "$root/internal/console/third_party/redoc/LICENSE"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$root/internal/console/third_party/redoc/redoc.standalone.js.LICENSE.txt"
echo "$VERSION" >"$root/internal/console/third_party/redoc/VERSION"
echo "vendor-redoc: redoc@$VERSION into internal/console/web/redoc.standalone.js"
