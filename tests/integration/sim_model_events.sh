# The simulated engine's KV events on the wire, checked by an independent
# subscriber: tests/tools/sim_kvpub runs the engine model on random requests
# (shared prefixes, aborts, a mid-run prefix-cache reset) and publishes its
# events over ZeroMQ on 127.0.0.1; a Python subscriber (Debian's
# /usr/bin/python3 with python3-zmq and python3-msgpack) decodes every batch,
# in both encodings, replays them into an empty cache set and must reach
# exactly the set the engine dumps at the end. A third run drops 10% of the
# batches on purpose and recovers them through vLLM's replay protocol.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
DRIVER="$KVG_TOOLS/sim_kvpub"
[ -x "$DRIVER" ] || { bad "driver built" "$DRIVER missing"; finish; }
$PY -c 'import zmq, msgpack' 2>/dev/null || { bad "python3-zmq and python3-msgpack present"; finish; }

cat >"$TMP/sub.py" <<'PY'
import os, sys, time
import msgpack, zmq

d, want_enc = sys.argv[1], sys.argv[2]
replay_mode = len(sys.argv) > 3 and sys.argv[3] == "replay"
TOPIC = b"kv@sim-test@tiny"
END = b"\xff" * 8

def fail(msg):
    print("subscriber: " + msg)
    open(os.path.join(d, "done"), "w").close()
    sys.exit(1)

def wait_for(name, secs):
    path = os.path.join(d, name)
    t0 = time.time()
    while time.time() - t0 < secs:
        if os.path.exists(path):
            return open(path).read()
        time.sleep(0.05)
    fail("timed out waiting for " + name)

pub_ep, replay_ep = wait_for("ready", 10).split()
ctx = zmq.Context()
sub = ctx.socket(zmq.SUB)
sub.setsockopt(zmq.RCVHWM, 0)
sub.setsockopt(zmq.LINGER, 0)
sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
sub.connect(pub_ep)

batches, first, last_seq = {}, None, None
deadline = time.time() + 120
quiet_since = time.time()
while time.time() < deadline:
    if sub.poll(100):
        frames = sub.recv_multipart()
        if len(frames) != 3 or frames[0] != TOPIC or len(frames[1]) != 8:
            fail("bad frames %r" % (frames[:2],))
        seq = int.from_bytes(frames[1], "big")
        if seq in batches:
            fail("seq %d twice" % seq)
        batches[seq] = frames[2]
        quiet_since = time.time()
        if first is None:
            first = seq
            open(os.path.join(d, "go"), "w").close()
        continue
    if last_seq is None and os.path.exists(os.path.join(d, "dump")):
        last_seq = int(open(os.path.join(d, "dump")).readline().split()[1])
    if last_seq is not None:
        if all(s in batches for s in range(first, last_seq + 1)):
            break
        if replay_mode and time.time() - quiet_since > 0.5:
            break
if first is None or last_seq is None:
    fail("no data (first=%r last=%r)" % (first, last_seq))

missing = [s for s in range(first, last_seq + 1) if s not in batches]
if missing and not replay_mode:
    fail("%d batches missing without drops, first %d" % (len(missing), missing[0]))
if replay_mode:
    if not missing:
        fail("drop mode produced no gap")
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(replay_ep)
    dealer.send_multipart([b"", missing[0].to_bytes(8, "big")])
    got = 0
    t0 = time.time()
    while time.time() - t0 < 30:
        if not dealer.poll(2000):
            fail("replay timed out")
        empty, seqb, payload = dealer.recv_multipart()
        if empty != b"" or len(seqb) != 8:
            fail("bad replay frames")
        if seqb == END:
            if payload != b"":
                fail("end marker with a payload")
            break
        seq = int.from_bytes(seqb, "big")
        if seq < missing[0]:
            fail("replayed seq %d before the start %d" % (seq, missing[0]))
        if seq in batches and batches[seq] != payload:
            fail("replayed batch %d differs" % seq)
        batches[seq] = payload
        got += 1
    still = [s for s in range(first, last_seq + 1) if s not in batches]
    if still:
        fail("%d batches still missing after replay" % len(still))
    print("subscriber: %d gaps filled by replay (%d batches replayed)" % (len(missing), got))

cache = set()
n_events = {"BlockStored": 0, "BlockRemoved": 0, "AllBlocksCleared": 0}
for seq in range(first, last_seq + 1):
    batch = msgpack.unpackb(batches[seq], raw=False)
    if not isinstance(batch, list) or len(batch) != 3 or not isinstance(batch[0], float):
        fail("batch %d is not [ts, events, dp_rank]" % seq)
    for ev in batch[1]:
        if want_enc == "map":
            if not isinstance(ev, dict):
                fail("expected a map event, got %r" % (ev,))
            tag = ev["type"]
            hashes = ev.get("block_hashes")
            if tag == "BlockStored":
                tokens, bs, parent = ev["token_ids"], ev["block_size"], ev["parent_block_hash"]
                if ev.get("medium") != "GPU" or "lora_id" not in ev:
                    fail("map BlockStored fields %r" % sorted(ev))
        else:
            if not isinstance(ev, list):
                fail("expected an array event, got %r" % (ev,))
            tag = ev[0]
            if tag == "BlockStored":
                if len(ev) != 7 or ev[5] is not None or ev[6] != "GPU":
                    fail("array BlockStored %r" % (ev[:1] + ev[4:],))
                hashes, parent, tokens, bs = ev[1], ev[2], ev[3], ev[4]
            elif tag == "BlockRemoved":
                hashes = ev[1]
        n_events[tag] = n_events.get(tag, 0) + 1
        if tag == "BlockStored":
            if len(tokens) != len(hashes) * bs or bs != 16:
                fail("token count %d for %d blocks of %d" % (len(tokens), len(hashes), bs))
            if parent is not None and not (0 <= parent < 2**64):
                fail("parent hash out of range")
            for h in hashes:
                if not (0 < h < 2**64) or h in cache:
                    fail("stored hash %r invalid or already resident" % h)
                cache.add(h)
        elif tag == "BlockRemoved":
            for h in hashes:
                if h not in cache:
                    fail("removed hash %d was not resident" % h)
                cache.discard(h)
        elif tag == "AllBlocksCleared":
            cache.clear()
        else:
            fail("unknown event %r" % tag)

lines = open(os.path.join(d, "dump")).read().split("\n")[1:]
engine = set(int(x) for x in lines if x)
open(os.path.join(d, "done"), "w").close()
if engine != cache:
    fail("cache differs: %d only in engine, %d only on the wire"
         % (len(engine - cache), len(cache - engine)))
if n_events["BlockRemoved"] < 100 or n_events["AllBlocksCleared"] != 1:
    fail("too little exercised: %r" % n_events)
print("subscriber: %d batches, events %r, %d resident blocks match"
      % (last_seq - first + 1, n_events, len(cache)))
PY

# run_case NAME SUBSCRIBER_ARGS -- DRIVER_ARGS
run_case() {
  local name=$1 enc=$2 mode=$3; shift 3
  local dir="$TMP/$name"
  mkdir -p "$dir"
  "$DRIVER" --dir "$dir" --encoding "$enc" "$@" >"$dir/driver.log" 2>&1 &
  local dpid=$!
  PIDS+=($dpid)
  if timeout -k 5 150 $PY "$TMP/sub.py" "$dir" "$enc" $mode >"$dir/sub.log" 2>&1; then
    ok "$name"
  else
    bad "$name" "$(tail -3 "$dir/sub.log" | tr '\n' ' ')"
    tail -5 "$dir/driver.log"
  fi
  cat "$dir/sub.log"
  # the driver exits once it sees "done"; bounded wait, then it is killed by PID
  for _ in $(seq 1 "$(scaled 100)"); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$dpid" 2>/dev/null; then
    bad "$name: driver exits" "still running"
    kill -TERM "$dpid" 2>/dev/null
  elif wait "$dpid"; then
    ok "$name: driver exits cleanly"
  else
    bad "$name: driver exits cleanly" "$(tail -2 "$dir/driver.log" | tr '\n' ' ')"
  fi
}

run_case "array encoding: wire replay equals the engine cache" array "" --requests 1500 --seed 3
run_case "map encoding: wire replay equals the engine cache" map "" --requests 1500 --seed 4
run_case "10% dropped batches recovered by replay" array replay --requests 800 --seed 5 \
  --drop 0.1 --replay
finish
