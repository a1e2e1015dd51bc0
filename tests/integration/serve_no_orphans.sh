# kvgate serve's embedded default (no workers: it starts 4 `kvgate sim`
# children) leaves no engine behind: (a) when serve fails after starting
# them (its port already taken, a missing --keys file, a missing
# tokenizer), and (b) when serve is killed with SIGKILL (the children's
# parent-death signal). serve runs under a small python3 watcher that is a
# child subreaper (PR_SET_CHILD_SUBREAPER): an engine serve leaves behind
# becomes the watcher's child, which it finds through /proc, counts, and
# stops by PID; every wait in it is bounded.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/watch.py" <<'PY'
# watch.py fail|kill PORT LOG -- serve's arguments. Prints one line:
# "rc R seen N left M": serve's exit code, the engines seen as serve's
# children while it ran, the children left 10 s after serve was gone.
import ctypes, os, signal, subprocess, sys, time, urllib.request

mode, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
argv = sys.argv[sys.argv.index('--') + 1:]
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0):  # PR_SET_CHILD_SUBREAPER
    sys.exit('watch.py: cannot become a subreaper')

def children(ppid):
    out = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(')') + 2:].split()
        if int(rest[1]) == ppid and rest[0] != 'Z':
            out.append(int(d))
    return out

def cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return '?'

def reap():  # only once serve itself is reaped: these are orphans
    for _ in range(1000):
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return

with open(log, 'ab') as lf:
    serve = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf)
seen = set()
if mode == 'fail':
    end = time.time() + 30
    while serve.poll() is None and time.time() < end:
        seen.update(p for p in children(serve.pid) if ' sim ' in cmdline(p))
        time.sleep(0.005)
else:
    end = time.time() + 20
    while serve.poll() is None and time.time() < end:
        try:
            urllib.request.urlopen('http://127.0.0.1:%d/health' % port, timeout=1).read()
            break
        except OSError:
            time.sleep(0.1)
    seen.update(p for p in children(serve.pid) if ' sim ' in cmdline(p))
    if serve.poll() is None:
        os.kill(serve.pid, signal.SIGKILL)
if serve.poll() is None:
    os.kill(serve.pid, signal.SIGKILL)
serve.wait()
left = []
for _ in range(100):
    reap()
    left = children(os.getpid())
    if not left:
        break
    time.sleep(0.1)
for p in left:
    print('left behind: pid %d: %s' % (p, cmdline(p)), file=sys.stderr)
    os.kill(p, signal.SIGKILL)
for p in left:
    try:
        os.waitpid(p, 0)
    except ChildProcessError:
        pass
print('rc %d seen %d left %d' % (serve.returncode, len(seen), len(left)))
PY

# watch MODE PORT NAME serve-args...: runs watch.py (recorded by PID), its
# line in $TMP/NAME.res, serve's output in $TMP/NAME.log.
watch() {
  local mode=$1 port=$2 name=$3
  shift 3
  /usr/bin/python3 "$TMP/watch.py" "$mode" "$port" "$TMP/$name.log" -- \
    "$KVG_BIN" serve --host 127.0.0.1 --port "$port" "$@" >"$TMP/$name.res" 2>>"$TMP/$name.log" &
  local w=$!
  PIDS+=($w)
  wait "$w"
  cat "$TMP/$name.res"
}
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$TMP/$1.res"; }
started() { grep -q 'started 4 simulated engines' "$TMP/$1.log"; }

# (a) serve fails after starting its engines: none is left.
# Its port is held by a plain listener (no SO_REUSEPORT, so serve's bind fails).
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$TMP/listener.out" &
LISTENER=$!
PIDS+=($LISTENER)
for _ in $(seq 1 50); do [ -s "$TMP/listener.out" ] && break; sleep 0.1; done
TAKEN=$(head -1 "$TMP/listener.out")
check "a listener holds a port" [ -n "$TAKEN" ]
watch fail "$TAKEN" taken
check "port taken: serve fails (rc $(field taken rc))" [ "$(field taken rc)" != 0 ]
check "port taken: the bind failed" grep -q 'cannot listen' "$TMP/taken.log"
check "port taken: engines were started" started taken
check "port taken: no engine left ($(field taken left))" [ "$(field taken left)" = 0 ]
kill -TERM "$LISTENER"

P=$(free_port)
watch fail "$P" keys --keys "$TMP/no-such-keys.yaml"
check "missing --keys file: serve fails" [ "$(field keys rc)" != 0 ]
check "missing --keys file: engines were started" started keys
check "missing --keys file: no engine left ($(field keys left))" [ "$(field keys left)" = 0 ]

watch fail "$P" tok --tokenizer "$TMP/no-such-dir/tokenizer.json"
check "missing tokenizer: serve fails" [ "$(field tok rc)" != 0 ]
check "missing tokenizer: engines were started" started tok
check "missing tokenizer: no engine left ($(field tok left))" [ "$(field tok left)" = 0 ]

# A typo'd flag is refused before any engine starts.
watch fail "$P" typo --wokrer-urls http://127.0.0.1:1
check "typo'd flag: serve fails" [ "$(field typo rc)" != 0 ]
none_started() { [ "$(field "$1" seen)" = 0 ] && ! started "$1"; }
check "typo'd flag: no engine started" none_started typo
check "typo'd flag: no engine left" [ "$(field typo left)" = 0 ]

# (b) serve killed with SIGKILL while it runs: its engines exit too.
watch kill "$P" killed
check "SIGKILL: serve had its 4 engines ($(field killed seen))" [ "$(field killed seen)" = 4 ]
check "SIGKILL: no engine left ($(field killed left))" [ "$(field killed left)" = 0 ]

for n in taken keys tok typo killed; do
  [ "$(field "$n" left)" = 0 ] || { echo "---- $n"; cat "$TMP/$n.log"; }
done
finish
