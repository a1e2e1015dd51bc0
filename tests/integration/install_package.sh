# Installing kvgate: `kvgate --version` names the commit the binary was built
# from (and a tree without .git says it has none); `make install PREFIX
# DESTDIR` puts bin/kvgate and share/man/man1/kvgate.1, a man page that
# renders without warnings and lists every flag the commands' --help list;
# scripts/build-deb.sh makes a Debian package whose control, conffiles and
# files are right, which unpacks into a scratch root (dpkg-deb -x) where the
# packaged binary runs (--version, and serve on the packaged config answers a
# request) and systemd-analyze verifies the hardened kvgate.service (a broken
# copy of the unit is caught, so the check can fail) and rates its exposure.
. "$(dirname "$0")/lib.sh"

VERSION_LINE=$("$KVG_BIN" --version)
check "kvgate --version: release and commit ($VERSION_LINE)" \
  grep -qE '^kvgate [0-9]+\.[0-9]+\.[0-9]+ \(commit ' <<<"$VERSION_LINE"
check "kvgate version and --version agree" [ "$("$KVG_BIN" version)" = "$VERSION_LINE" ]
if [ "$(git -C "$KVG_ROOT" rev-parse --show-toplevel 2>/dev/null)" = "$KVG_ROOT" ]; then
  commit=$(sed -nE 's/.*\(commit ([0-9a-f]{12})(-dirty)?, .*/\1/p' <<<"$VERSION_LINE")
  check "the commit named is one of this checkout's (${commit:-none})" \
    git -C "$KVG_ROOT" cat-file -e "${commit:-none}^{commit}"
else
  skip "--version names this checkout's commit" "$KVG_ROOT is not a git checkout"
fi

# A tree without .git: version.c compiled by the Makefile alone, in a copy.
NG=$TMP/nogit
mkdir -p "$NG/src/cmd" "$NG/src/base"
cp "$KVG_ROOT/Makefile" "$NG/"
cp "$KVG_ROOT/src/cmd/version.c" "$KVG_ROOT/src/cmd/cmd.h" "$NG/src/cmd/"
cp "$KVG_ROOT/src/base/opt.h" "$NG/src/base/"
printf '#include "cmd/cmd.h"\nint main(int c, char **v) { return kvg_cmd_version_main(c, v); }\n' >"$NG/main.c"
nogit_version() { # [make args]: the line a binary built there prints
  (cd "$NG" && rm -rf build && make -s BUILD=t build/t/src/cmd/version.o "$@" >/dev/null 2>&1 &&
    cc -Isrc main.c build/t/src/cmd/version.o -o v && ./v)
}
got=$(nogit_version)
check "built outside git: --version says so ($got)" \
  [ "$got" = "$(awk '{print $1, $2}' <<<"$VERSION_LINE") (commit unknown: built outside a git checkout)" ]
got=$(nogit_version KVG_COMMIT='f00d;rm -rf x')
check "KVG_COMMIT given: named, cut to what a version holds ($got)" \
  [ "$got" = "$(awk '{print $1, $2}' <<<"$VERSION_LINE") (commit f00drm-rfx)" ]

# make install, from the build the test runs on.
name=${KVG_BIN#"$KVG_ROOT/build/"}
name=${name%/kvgate}
if [ "$KVG_BIN" != "$KVG_ROOT/build/$name/kvgate" ] || [[ $name == */* ]]; then
  skip "make install and the package" "KVG_BIN is not a build under $KVG_ROOT/build/"
  finish
fi
INST=$TMP/inst
make -s -C "$KVG_ROOT" BUILD="$name" install PREFIX=/opt/kv DESTDIR="$INST" >"$TMP/install.out" 2>&1
check "make install PREFIX=/opt/kv DESTDIR=...: exit 0" [ $? = 0 ]
check "bin/kvgate installed, executable" [ -x "$INST/opt/kv/bin/kvgate" ]
check "share/man/man1/kvgate.1 installed" [ -f "$INST/opt/kv/share/man/man1/kvgate.1" ]
check "the installed binary's --version" [ "$("$INST/opt/kv/bin/kvgate" --version)" = "$VERSION_LINE" ]
MAN=$INST/opt/kv/share/man/man1/kvgate.1
groff -man -ww -z "$MAN" >"$TMP/groff.err" 2>&1
check "the man page renders without warnings" [ ! -s "$TMP/groff.err" ]
check "its NAME line (whatis)" grep -q "kvgate - OpenAI-compatible LLM gateway" < <(lexgrog "$MAN" 2>&1)
# Every flag every command's --help lists is in the page, as the roff of
# the same option table writes it.
missing=""
for c in serve sim autoscale observe tokenize bench "bench --scenario pd" "bench --suite routing"; do
  # shellcheck disable=SC2086
  for f in $("$KVG_BIN" $c --help | sed -nE 's/^  --([a-z0-9-]+).*/\1/p'); do
    grep -qF "\\fB\\-\\-${f//-/\\-}\\fR" "$MAN" || missing="$missing $c:--$f"
  done
done
check "every --help flag is in the man page${missing:+ (missing:$missing)}" [ -z "$missing" ]
check "a section per command" \
  [ "$(grep -cE '^\.SH "KVGATE (SERVE|SIM|AUTOSCALE|OBSERVE|TOKENIZE|BENCH|KEYS|VERSION)"$' "$MAN")" = 8 ]

# The Debian package.
BUILD="$name" OUT="$TMP/deb" JOBS=1 bash "$KVG_ROOT/scripts/build-deb.sh" >"$TMP/deb.out" 2>"$TMP/deb.log"
check "scripts/build-deb.sh: exit 0" [ $? = 0 ]
DEB=$(tail -1 "$TMP/deb.out")
if [ ! -f "$DEB" ]; then
  bad "a .deb was written" "$(tail -5 "$TMP/deb.log")"
  finish
fi
release=$(awk '{print $2}' <<<"$VERSION_LINE")
field() { dpkg-deb -f "$DEB" "$1"; }
check "Package: kvgate" [ "$(field Package)" = kvgate ]
check "Version: the release and the commit ($(field Version))" grep -qE "^$release(\+g[0-9a-f]{12}(\.dirty)?)?$" <<<"$(field Version)"
check "Architecture: this machine's" [ "$(field Architecture)" = "$(dpkg --print-architecture)" ]
check "Depends: the linked libraries and procps ($(field Depends))" \
  grep -qE '(^|, )libuv1 .*libzmq5.*procps' <<<"$(field Depends)"
dpkg-deb -e "$DEB" "$TMP/control"
check "conffiles: /etc/kvgate/kvgate.yaml" [ "$(cat "$TMP/control/conffiles")" = /etc/kvgate/kvgate.yaml ]
for s in postinst prerm postrm; do
  check "$s is valid sh" sh -n "$TMP/control/$s"
done

R=$TMP/root
mkdir -p "$R"
dpkg-deb -x "$DEB" "$R"
for f in usr/bin/kvgate usr/share/man/man1/kvgate.1.gz lib/systemd/system/kvgate.service \
  etc/kvgate/kvgate.yaml usr/share/doc/kvgate/copyright usr/share/doc/kvgate/README.md; do
  check "package holds /$f" [ -f "$R/$f" ]
done
check "the packaged binary runs: --version" [ "$("$R/usr/bin/kvgate" --version)" = "$VERSION_LINE" ]
no_symtab() { ! readelf -S "$1" | grep -q '\.symtab'; }
check "the packaged binary is stripped" no_symtab "$R/usr/bin/kvgate"
check "the packaged config is examples/kvgate.yaml" cmp -s "$R/etc/kvgate/kvgate.yaml" "$KVG_ROOT/examples/kvgate.yaml"
check "the packaged man page is the built one" cmp -s <(zcat "$R/usr/share/man/man1/kvgate.1.gz") "$MAN"

# The unit's command line, as the unit runs it, from the scratch root: the
# packaged config fronts the embedded simulated engines; one request.
U=$R/lib/systemd/system/kvgate.service
exec_start=$(sed -n 's/^ExecStart=//p' "$U")
check "ExecStart: serve on the packaged config ($exec_start)" \
  [ "$exec_start" = "/usr/bin/kvgate serve --config /etc/kvgate/kvgate.yaml" ]
P=$(free_port)
"$R/usr/bin/kvgate" serve --config "$R/etc/kvgate/kvgate.yaml" --port "$P" >"$TMP/pkg-serve.out" 2>"$TMP/pkg-serve.log" &
PKG_PID=$!
PIDS+=($PKG_PID)
wait_http "http://127.0.0.1:$P/readiness" 20 || bad "the packaged serve became ready"
code=$(curl -s -m 20 -o "$TMP/pkg.json" -w '%{http_code}' "http://127.0.0.1:$P/v1/chat/completions" \
  -d '{"model":"kvgate-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":4}')
check "the packaged serve answers a chat request (HTTP $code)" [ "$code" = 200 ]
kill -TERM "$PKG_PID"
for _ in $(seq 1 "$(scaled 100)"); do kill -0 "$PKG_PID" 2>/dev/null || break; sleep 0.1; done
wait "$PKG_PID"
check "SIGTERM (systemctl stop): drains and exits 0" [ $? = 0 ]

for k in DynamicUser=yes ProtectSystem=strict NoNewPrivileges=yes ProtectHome=yes PrivateTmp=yes \
  PrivateDevices=yes CapabilityBoundingSet= SystemCallFilter=@system-service; do
  check "kvgate.service: $k" grep -qx "$k" "$U"
done
if ! command -v systemd-analyze >/dev/null 2>&1; then
  skip "systemd-analyze verify" "systemd-analyze is not installed"
  finish
fi
# verify resolves the unit's dependencies (sysinit.target...) and commands
# in the root: the system's own units and /bin/kill (procps, a dependency)
# stand for an installed system's; man finds the packaged page.
cp -an /lib/systemd/system/. "$R/lib/systemd/system/"
mkdir -p "$R/bin" && cp /bin/kill "$R/bin/kill"
MANPATH=$R/usr/share/man systemd-analyze verify --root="$R" kvgate.service >"$TMP/verify.out" 2>&1
rc=$?
check "systemd-analyze verify kvgate.service: clean (rc $rc)" [ $rc = 0 -a ! -s "$TMP/verify.out" ]
[ -s "$TMP/verify.out" ] && sed 's/^/#   /' "$TMP/verify.out"
sed -e 's/^ProtectSystem=strict/ProtectSystem=bogus/' -e 's/^DynamicUser=yes/DynamicUsr=yes/' "$U" \
  >"$R/lib/systemd/system/kvgate-broken.service"
MANPATH=$R/usr/share/man systemd-analyze verify --root="$R" kvgate-broken.service >"$TMP/broken.out" 2>&1
check "... and a broken copy is reported" grep -q "DynamicUsr" "$TMP/broken.out"
systemd-analyze security --offline=true --root="$R" --threshold=20 kvgate.service >"$TMP/sec.out" 2>&1
rc=$?
check "systemd-analyze security: exposure at most 2.0 ($(grep -o 'exposure level for kvgate.service: [0-9.]* [A-Z]*' "$TMP/sec.out"))" [ $rc = 0 ]
finish
