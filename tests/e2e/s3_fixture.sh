# A real S3 server for the tests, the benchmarks and ./demo.sh (docs/s3.md, "The test server"):
# Ceph 16's RADOS Gateway on a single-node cluster (one monitor, one memstore OSD, no manager, no
# cephx), every daemon in the foreground under this fixture's control, on 127.0.0.1 only.
# Source it after lib.sh (or on its own: it needs only WORK), then:
#   s3_start           starts the cluster and radosgw, makes an S3 user and the bucket
#                      $S3_BUCKET; exports AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
#                      AWS_SECRET_ACCESS_KEY and AWS_REGION as the AWS CLI reads them, and sets
#                      S3_URL=s3://$S3_BUCKET
#   s3_stop_gateway    kills radosgw (SIGKILL: a crash, for the fault tests)
#   s3_start_gateway   starts it again and waits until it answers
#   s3_stop            stops every daemon (also run at exit)
#   s3cmd, s3_curl     Debian's s3cmd, and curl with SigV4, against the fixture's endpoint
#   s3_delay US        a delay line of US microseconds each way (tests/e2e/delay_line.c, as the
#                      NFS fixture's) between this host and a client namespace the fixture makes;
#                      radosgw is restarted to listen on the line's address too. Sets
#                      S3_DELAYED_ENDPOINT; s3_client CMD... runs CMD in the client namespace.
#                      Needs root and DELAY_LINE. (Again: a new delay.)
# Ports (a block of 50: the OSD binds 8) come from S3_TAG (default: this shell's pid), so that
# two fixtures do not collide.
# Where Ceph is missing, s3_start prints "SKIP: why" and exits 77 (ctest: skipped, never passed);
# a caller that goes on without it (./demo.sh) defines its own s3_skip that returns.
# The config follows ../shared/peers/ceph-rgw.conf.tmpl; its two traps: without the `ms ... mode =
# crc` lines radosgw loops on an auth error, and without tcp_nodelay=1 a request at depth 1
# stalls about 40 ms.

S3_TAG=${S3_TAG:-$$}
S3_PORT_BASE=$(( 20000 + (S3_TAG % 250) * 50 ))  # below the ephemeral ports (32768-)
S3_MON_V2=$S3_PORT_BASE
S3_MON_V1=$(( S3_PORT_BASE + 1 ))
S3_RGW_PORT=$(( S3_PORT_BASE + 2 ))
S3_DIR=$WORK/ceph
S3_BUCKET=dsbucket
S3_URL=s3://$S3_BUCKET
S3_PIDS=()
S3_RGW_PID=

s3_skip() {
  echo "SKIP: the S3 fixture cannot run here: $*" >&2
  exit 77
}

s3_conf() {
  local fsid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$S3_DIR/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$S3_MON_V2,v1:127.0.0.1:$S3_MON_V1]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
ms bind port min = $(( S3_PORT_BASE + 3 ))
ms bind port max = $(( S3_PORT_BASE + 49 ))
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = false
ms mon client mode = crc
ms mon service mode = crc
ms mon cluster mode = crc
ms client mode = crc
ms service mode = crc
ms cluster mode = crc
run dir = $S3_DIR/run
admin socket = $S3_DIR/run/\$name.asok
log file = $S3_DIR/log/\$name.log
keyring = $S3_DIR/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon data avail warn = 1
mon data avail crit = 0
[mon]
mon data = $S3_DIR/mon/\$cluster-\$id
[osd]
osd data = $S3_DIR/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = 6442450944
osd memory target = 1073741824
osd op num shards = 2
osd op num threads per shard = 2
[client.rgw.gw]
rgw frontends = beast endpoint=127.0.0.1:$S3_RGW_PORT tcp_nodelay=1
rgw data = $S3_DIR/rgw
rgw dns name = localhost
rgw thread pool size = 128
EOF
}

# s3_daemon NAME CMD...: runs a daemon in the foreground, in the background of this shell.
s3_daemon() {
  local name=$1; shift
  "$@" >"$S3_DIR/log/$name.out" 2>&1 &
  S3_PIDS+=($!)
  [ "$name" = radosgw ] && S3_RGW_PID=$!
  return 0
}

s3_ceph() { ceph -c "$S3_DIR/ceph.conf" --connect-timeout 20 "$@"; }

s3_start_gateway() {
  s3_daemon radosgw radosgw -f -c "$S3_DIR/ceph.conf" -n client.rgw.gw
  local i
  for i in $(seq 300); do
    curl -s -o /dev/null "http://127.0.0.1:$S3_RGW_PORT/" && return 0
    kill -0 "$S3_RGW_PID" 2>/dev/null || break
    sleep 0.1
  done
  tail -5 "$S3_DIR/log/radosgw.out" >&2
  echo "FAIL: radosgw did not answer on 127.0.0.1:$S3_RGW_PORT" >&2
  return 1
}

s3_stop_gateway() {
  [ -n "$S3_RGW_PID" ] || return 0
  kill -9 "$S3_RGW_PID" 2>/dev/null || true
  wait "$S3_RGW_PID" 2>/dev/null || true
  S3_RGW_PID=
}

s3_start() {
  local tool
  for tool in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph curl; do
    command -v "$tool" >/dev/null || {
      s3_skip "$tool is missing (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common curl)"
      return 1
    }
  done
  S3_STARTED=$(date +%s.%N)
  mkdir -p "$S3_DIR"/{mon,osd/ceph-0,rgw,run,log}
  s3_conf
  local conf=$S3_DIR/ceph.conf
  monmaptool --create --addv a "[v2:127.0.0.1:$S3_MON_V2,v1:127.0.0.1:$S3_MON_V1]" \
    --fsid "$(awk '/^fsid/ {print $3}' "$conf")" "$S3_DIR/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$S3_DIR/monmap" >"$S3_DIR/log/mkfs-mon.out" 2>&1
  s3_daemon ceph-mon ceph-mon -f -c "$conf" -i a
  local id
  id=$(s3_ceph osd create)
  [ "$id" = 0 ] || { echo "FAIL: ceph osd create gave '$id'" >&2; return 1; }
  ceph-osd -c "$conf" -i 0 --mkfs >"$S3_DIR/log/mkfs-osd.out" 2>&1
  s3_ceph osd crush add-bucket node1 host >/dev/null 2>&1
  s3_ceph osd crush move node1 root=default >/dev/null 2>&1
  s3_ceph osd crush add osd.0 1.0 host=node1 >/dev/null 2>&1
  s3_daemon ceph-osd ceph-osd -f -c "$conf" -i 0
  s3_start_gateway
  export AWS_ACCESS_KEY_ID=DSPACKTESTKEY0000001 AWS_SECRET_ACCESS_KEY=dspack-test-secret-0000000000000000000001
  export AWS_ENDPOINT_URL=http://127.0.0.1:$S3_RGW_PORT AWS_REGION=us-east-1
  radosgw-admin -c "$conf" user create --uid dspack --display-name dspack \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" >/dev/null 2>&1
  # The bucket, through the gateway with curl's own SigV4 (a client other than ours).
  s3_curl -X PUT "$AWS_ENDPOINT_URL/$S3_BUCKET" >/dev/null
  S3_START_SECONDS=$(awk -v a="$S3_STARTED" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

# s3cmd ARGS...: Debian's s3cmd (a client other than ours) with the fixture's endpoint and keys.
s3cmd() {
  cat >"$S3_DIR/s3cfg" <<EOF
[default]
access_key = $AWS_ACCESS_KEY_ID
secret_key = $AWS_SECRET_ACCESS_KEY
host_base = ${AWS_ENDPOINT_URL#http://}
host_bucket = ${AWS_ENDPOINT_URL#http://}
use_https = False
signature_v2 = False
EOF
  command s3cmd -c "$S3_DIR/s3cfg" --no-progress "$@"
}

# s3_curl ARGS...: curl with SigV4 and the fixture's keys; fails on an HTTP error.
s3_curl() {
  curl -sS --fail --aws-sigv4 "aws:amz:$AWS_REGION:s3" -u "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

# The delay line's addresses: this host's end and the client namespace's, a /30 of their own.
S3_DELAYED_ADDR=
S3_DELAY_PID=
S3_HOST_NS=ds3h$S3_TAG
S3_CLIENT_NS=ds3c$S3_TAG

s3_delay() {
  : "${DELAY_LINE:?set DELAY_LINE to the dspack-delay-line binary}"
  s3_delay_off
  local n i hs cs
  n=$(( S3_TAG % 250 ))
  hs=dsd3${n}h
  cs=dsd3${n}c
  # The host's own namespace gets a name for the line to enter (removing the name later leaves
  # the namespace alone); the client's is made here.
  ip netns attach "$S3_HOST_NS" $$ 2>/dev/null || true
  ip netns add "$S3_CLIENT_NS" 2>/dev/null || true
  ip -n "$S3_CLIENT_NS" link set lo up
  "$DELAY_LINE" "$S3_HOST_NS" "$hs" "$S3_CLIENT_NS" "$cs" "$1" >"$S3_DIR/delay.out" 2>&1 &
  S3_DELAY_PID=$!
  for i in $(seq 100); do grep -q ready "$S3_DIR/delay.out" && break; sleep 0.02; done
  grep -q ready "$S3_DIR/delay.out" || { cat "$S3_DIR/delay.out" >&2; return 1; }
  S3_DELAYED_ADDR=10.213.$n.1
  ip addr add "$S3_DELAYED_ADDR/30" dev "$hs"
  ip -n "$S3_CLIENT_NS" addr add "10.213.$n.2/30" dev "$cs"
  ip link set "$hs" up
  ip -n "$S3_CLIENT_NS" link set "$cs" up
  S3_DELAYED_ENDPOINT=http://$S3_DELAYED_ADDR:$S3_RGW_PORT
  # radosgw binds its endpoints at start: again, with the line's address.
  sed -i "s|^rgw frontends = .*|rgw frontends = beast endpoint=127.0.0.1:$S3_RGW_PORT endpoint=$S3_DELAYED_ADDR:$S3_RGW_PORT tcp_nodelay=1|" \
    "$S3_DIR/ceph.conf"
  s3_stop_gateway
  s3_start_gateway
  for i in $(seq 100); do
    s3_client curl -s -o /dev/null "$S3_DELAYED_ENDPOINT/" && return 0
    sleep 0.1
  done
  echo "FAIL: radosgw did not answer through the delay line at $S3_DELAYED_ENDPOINT" >&2
  return 1
}

s3_delay_off() {
  [ -n "$S3_DELAY_PID" ] || return 0
  kill "$S3_DELAY_PID" 2>/dev/null || true
  wait "$S3_DELAY_PID" 2>/dev/null || true
  S3_DELAY_PID=
}

s3_client() { ip netns exec "$S3_CLIENT_NS" "$@"; }

s3_stop() {
  s3_delay_off
  if [ -n "$S3_DELAYED_ADDR" ]; then
    ip netns del "$S3_CLIENT_NS" 2>/dev/null || true
    ip netns del "$S3_HOST_NS" 2>/dev/null || true  # the name only
    S3_DELAYED_ADDR=
  fi
  local pid
  for pid in "${S3_PIDS[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  for pid in "${S3_PIDS[@]:-}"; do
    [ -n "$pid" ] || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  S3_PIDS=()
  S3_RGW_PID=
}
