#!/usr/bin/env bash
# Builds the Debian package of kvgate from this tree, with dpkg-deb from the
# `make install` tree (no debian/ directory, no debhelper):
#   /usr/bin/kvgate                       stripped
#   /usr/share/man/man1/kvgate.1.gz       made by `kvgate help --man`
#   /lib/systemd/system/kvgate.service    packaging/kvgate.service (hardened)
#   /etc/kvgate/kvgate.yaml               examples/kvgate.yaml, a conffile
#   /usr/share/doc/kvgate/                README, docs, copyright
# Depends: from dpkg-shlibdeps on the binary, and procps (the unit reloads
# with /bin/kill). The version is the binary's (kvgate --version) with the
# commit it was built from.
#
#   bash scripts/build-deb.sh          -> build/deb/kvgate_VERSION_ARCH.deb
# Environment: BUILD (the build directory's name, default release), OUT (the
# directory for the .deb), JOBS (make -j), KVG_COMMIT (as the Makefile takes
# it, for a tree without .git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-release}
OUT=${OUT:-$ROOT/build/deb}
JOBS=${JOBS:-$(nproc)}
BIN=build/$BUILD/kvgate

echo "build-deb: building $BIN and its man page (make BUILD=$BUILD)" >&2
make -s -j"$JOBS" BUILD="$BUILD" "$BIN" "build/$BUILD/kvgate.1"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/kvgate-deb.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/pkg
make -s BUILD="$BUILD" install PREFIX=/usr DESTDIR="$PKG"

# Debian's layout: a stripped binary, a compressed man page, the unit, the
# config as a conffile, the docs and the copyright file.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$PKG/usr/bin/kvgate"
gzip -9n "$PKG/usr/share/man/man1/kvgate.1"
install -D -m 0644 packaging/kvgate.service "$PKG/lib/systemd/system/kvgate.service"
install -D -m 0644 examples/kvgate.yaml "$PKG/etc/kvgate/kvgate.yaml"
DOC=$PKG/usr/share/doc/kvgate
install -d "$DOC/docs"
install -m 0644 README.md "$DOC/"
install -m 0644 docs/*.md "$DOC/docs/"
cat >"$DOC/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: kvgate

Files: *
Copyright: 2026 The kvgate authors
License: Apache-2.0
 On Debian systems, the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0 (and in the source's LICENSE file).
COPYRIGHT

# The version: the release, then the commit (Debian's order: 0.1.0+g<hash>
# sorts after 0.1.0); "unknown" commits give the release alone.
line=$("$PKG/usr/bin/kvgate" --version)
release=$(awk '{print $2}' <<<"$line")
commit=$(sed -n 's/.*(commit \([0-9a-zA-Z._+-]*\)[,)].*/\1/p' <<<"$line")
VERSION=$release
[ -n "$commit" ] && VERSION="$release+g${commit//-/.}"
ARCH=$(dpkg --print-architecture)

# Depends: the shared libraries the binary links, as dpkg-shlibdeps names
# them (it reads debian/control, so it runs in a scratch source tree).
mkdir -p "$STAGE/src/debian"
printf 'Source: kvgate\n\nPackage: kvgate\nArchitecture: any\n' >"$STAGE/src/debian/control"
DEPENDS=$(cd "$STAGE/src" && dpkg-shlibdeps -O -e"$PKG/usr/bin/kvgate" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$DEPENDS" ] || { echo "build-deb: dpkg-shlibdeps gave no dependencies" >&2; exit 1; }

install -d "$PKG/DEBIAN"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$PKG/DEBIAN/"
echo /etc/kvgate/kvgate.yaml >"$PKG/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat >"$PKG/DEBIAN/control" <<CONTROL
Package: kvgate
Version: $VERSION
Architecture: $ARCH
Maintainer: The kvgate authors <kvgate@localhost>
Installed-Size: $SIZE
Depends: $DEPENDS, procps
Section: net
Priority: optional
Description: OpenAI-compatible LLM gateway and KV-cache-aware router
 kvgate sits in front of a pool of LLM inference servers (vLLM, SGLang,
 llama.cpp's server): a gateway (API keys, token quotas, priorities, TLS),
 a router that follows what each engine holds in its KV cache (from the
 engines' KV events) and weighs it against load, prefill/decode
 disaggregation, an autoscaler, and a simulated engine and benchmark.
 .
 The kvgate.service unit runs "kvgate serve --config /etc/kvgate/kvgate.yaml";
 it is installed but not enabled.
CONTROL

mkdir -p "$OUT"
DEB=$OUT/kvgate_${VERSION}_${ARCH}.deb
# Files owned by root whoever builds (dpkg-deb's --root-owner-group).
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DEB" >/dev/null
echo "build-deb: $DEB" >&2
echo "$DEB"
