# A real NFS server for the tests, the benchmarks and ./demo.sh (docs/nfs.md, "The fixture").
# Source it after lib.sh (or on its own: it needs only WORK), then:
#   nfs_start          starts nfs-ganesha (NFSv3, VFS FSAL) in a network namespace of its own,
#                      exporting $NFS_EXPORT_DIR as /export, and a client namespace joined to it
#                      by a veth pair; sets NFS_URL=nfs://ADDR/export
#   nfs_delay US       adds a delay line of US microseconds each way (tests/e2e/delay_line.c) on
#                      a second pair of addresses; sets NFS_DELAYED_URL (again: a new delay)
#   nfs_client CMD...  runs CMD in the client's namespace (the only place the server is seen)
#   nfs_stop           stops the server and removes both namespaces (also run at exit)
# The server's rpcbind runs inside its namespace (on the namespace's own port 111 and its own
# /run), so plain URLs work as they do against a real server. All traffic stays on the two
# addresses this fixture assigns inside the namespaces it made.
# Where ganesha or network namespaces are missing, nfs_start prints "SKIP: why" and exits 77,
# which ctest reports as skipped (never as passed). A caller that goes on without NFS (./demo.sh)
# defines its own nfs_skip that returns; nfs_start then returns 1.

NFS_TAG=${NFS_TAG:-$$}
NFS_SERVER_NS=dsnfs-$NFS_TAG-s
NFS_CLIENT_NS=dsnfs-$NFS_TAG-c
# A /30 per fixture in 10.213.0.0/16, from the tag, so that parallel tests do not collide.
NFS_NET=$(( (NFS_TAG % 16000) * 4 ))
NFS_ADDR=10.213.$(( NFS_NET / 256 )).$(( NFS_NET % 256 + 1 ))
NFS_CLIENT_ADDR=10.213.$(( NFS_NET / 256 )).$(( NFS_NET % 256 + 2 ))
NFS_DELAYED_ADDR=10.214.$(( NFS_NET / 256 )).$(( NFS_NET % 256 + 1 ))
NFS_DELAYED_CLIENT=10.214.$(( NFS_NET / 256 )).$(( NFS_NET % 256 + 2 ))
NFS_DIR=$WORK/nfs-server
NFS_EXPORT_DIR=$NFS_DIR/export
NFS_URL=nfs://$NFS_ADDR/export
NFS_DELAYED_URL=nfs://$NFS_DELAYED_ADDR/export
NFS_PGID=
NFS_DELAY_PID=

nfs_skip() {
  echo "SKIP: the NFS fixture cannot run here: $*" >&2
  exit 77
}

nfs_start() {
  command -v ganesha.nfsd >/dev/null ||
    { nfs_skip "ganesha.nfsd is missing (apt-get install nfs-ganesha nfs-ganesha-vfs)"; return 1; }
  command -v rpcbind >/dev/null || { nfs_skip "rpcbind is missing (apt-get install rpcbind)"; return 1; }
  [ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] || ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 ||
    { nfs_skip "ganesha's VFS FSAL is missing (apt-get install nfs-ganesha-vfs)"; return 1; }
  [ "$(id -u)" -eq 0 ] || { nfs_skip "network namespaces need root"; return 1; }
  ip netns add "$NFS_SERVER_NS" 2>"$WORK/netns.err" ||
    { nfs_skip "ip netns add failed: $(head -1 "$WORK/netns.err")"; return 1; }
  NFS_CLEANUP=1
  ip netns add "$NFS_CLIENT_NS"
  local vs=dsv${NFS_TAG}s vc=dsv${NFS_TAG}c
  ip link add "$vs" type veth peer name "$vc"
  ip link set "$vs" netns "$NFS_SERVER_NS"
  ip link set "$vc" netns "$NFS_CLIENT_NS"
  ip -n "$NFS_SERVER_NS" addr add "$NFS_ADDR/30" dev "$vs"
  ip -n "$NFS_CLIENT_NS" addr add "$NFS_CLIENT_ADDR/30" dev "$vc"
  for ns in "$NFS_SERVER_NS" "$NFS_CLIENT_NS"; do ip -n "$ns" link set lo up; done
  ip -n "$NFS_SERVER_NS" link set "$vs" up
  ip -n "$NFS_CLIENT_NS" link set "$vc" up

  mkdir -p "$NFS_EXPORT_DIR" "$NFS_DIR/squashed"
  cat >"$NFS_DIR/ganesha.conf" <<EOF
NFS_CORE_PARAM {
  Protocols = 3;
  NFS_Port = 2049;
  MNT_Port = 20048;
  # Every address of the namespace: the veth's and the delay line's. (ganesha resolves this with
  # AI_ADDRCONFIG: the namespace needs a non-loopback address, which the veth gives it.)
  Bind_addr = 0.0.0.0;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Enable_UDP = false;
  Mount_Path_Pseudo = true;
}
NFSV4 { Graceless = true; }
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
  Export_Id = 1;
  Path = $NFS_EXPORT_DIR;
  Pseudo = /export;
  Access_Type = RW;
  Squash = No_Root_Squash;
  SecType = sys;
  Protocols = 3;
  Transports = TCP;
  FSAL { Name = VFS; }
}
# Every client is the anonymous user here: what the permission tests read.
EXPORT {
  Export_Id = 2;
  Path = $NFS_DIR/squashed;
  Pseudo = /squashed;
  Access_Type = RW;
  Squash = All_Squash;
  Anonymous_Uid = 65534;
  Anonymous_Gid = 65534;
  SecType = sys;
  Protocols = 3;
  Transports = TCP;
  FSAL { Name = VFS; }
}
EOF
  # The server's own /run (rpcbind's socket, ganesha's pid) inside the namespace's mount namespace.
  cat >"$NFS_DIR/server.sh" <<'EOF'
set -e
mount -t tmpfs tmpfs /run
rpcbind -f -w &
for _ in $(seq 50); do [ -S /run/rpcbind.sock ] && break; sleep 0.1; done
exec ganesha.nfsd -F -f "$1/ganesha.conf" -L "$1/ganesha.log" -p "$1/ganesha.pid" -N NIV_EVENT
EOF
  nfs_server_up
}

# Starts (or restarts) the server processes; waits until MOUNT answers.
nfs_server_up() {
  : >"$NFS_DIR/ganesha.log"
  setsid ip netns exec "$NFS_SERVER_NS" sh "$NFS_DIR/server.sh" "$NFS_DIR" >"$NFS_DIR/server.out" 2>&1 &
  NFS_PGID=$!
  local i
  for i in $(seq 100); do
    if grep -q 'NFS SERVER INITIALIZED' "$NFS_DIR/ganesha.log" 2>/dev/null &&
       ip netns exec "$NFS_CLIENT_NS" nfs-ls "$NFS_URL" >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$NFS_PGID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$NFS_DIR/server.out" >&2
  grep -v DBUS "$NFS_DIR/ganesha.log" | tail -5 >&2
  fail "the NFS server did not start (log above)"
}

# Stops the server processes (the namespaces stay: nfs_server_up starts them again).
nfs_server_down() {
  [ -n "$NFS_PGID" ] || return 0
  kill -- "-$NFS_PGID" 2>/dev/null || true
  local i
  for i in $(seq 50); do kill -0 -- "-$NFS_PGID" 2>/dev/null || break; sleep 0.1; done
  kill -9 -- "-$NFS_PGID" 2>/dev/null || true
  NFS_PGID=
}

nfs_delay() {
  : "${DELAY_LINE:?set DELAY_LINE to the dspack-delay-line binary}"
  nfs_delay_off
  local ds=dsd${NFS_TAG}s dc=dsd${NFS_TAG}c i
  "$DELAY_LINE" "$NFS_SERVER_NS" "$ds" "$NFS_CLIENT_NS" "$dc" "$1" >"$NFS_DIR/delay.out" 2>&1 &
  NFS_DELAY_PID=$!
  for i in $(seq 100); do grep -q ready "$NFS_DIR/delay.out" && break; sleep 0.02; done
  grep -q ready "$NFS_DIR/delay.out" || { cat "$NFS_DIR/delay.out" >&2; fail "the delay line did not start"; }
  ip -n "$NFS_SERVER_NS" addr add "$NFS_DELAYED_ADDR/30" dev "$ds"
  ip -n "$NFS_CLIENT_NS" addr add "$NFS_DELAYED_CLIENT/30" dev "$dc"
  # Ethernet's MTU: the devices offload segmentation (tests/e2e/delay_line.c), so TCP still
  # hands the line 64 KiB segments, as it does a virtual machine's NIC.
  ip -n "$NFS_SERVER_NS" link set "$ds" up
  ip -n "$NFS_CLIENT_NS" link set "$dc" up
}

nfs_delay_off() {
  [ -n "$NFS_DELAY_PID" ] || return 0
  kill "$NFS_DELAY_PID" 2>/dev/null || true
  wait "$NFS_DELAY_PID" 2>/dev/null || true
  NFS_DELAY_PID=
}

nfs_client() { ip netns exec "$NFS_CLIENT_NS" "$@"; }

# nfs_kill_under PID PATTERN READY...: once the command READY... succeeds (tried for 4 s), pauses
# the client process matching PATTERN (pkill -f), stops the server, lets the client go on and
# waits for PID; its exit code is left in NFS_KILL_RC. The caller restarts the server.
nfs_kill_under() {
  local pid=$1 pattern=$2 _
  shift 2
  for _ in $(seq 400); do "$@" && break; sleep 0.01; done
  pkill -STOP -f "$pattern" || true
  nfs_server_down
  pkill -CONT -f "$pattern" || true
  NFS_KILL_RC=0
  wait "$pid" || NFS_KILL_RC=$?
}

nfs_stop() {
  [ -n "${NFS_CLEANUP:-}" ] || return 0
  nfs_delay_off
  nfs_server_down
  ip netns del "$NFS_CLIENT_NS" 2>/dev/null || true
  ip netns del "$NFS_SERVER_NS" 2>/dev/null || true
  NFS_CLEANUP=
}
