#!/usr/bin/env bash
# A throw-away local Ceph cluster for auxstore's RADOS-tier tests.
#
# One monitor (mon.a), one manager (mgr.x), three BlueStore OSDs on sparse
# files, auth none, loopback only, no systemd.  Everything lives under DIR.
#
#   cluster.sh install                 apt-get the Debian 12 Ceph packages
#   cluster.sh start DIR               create (empty/absent DIR) or restart
#                                      (stopped DIR) the cluster, wait for
#                                      HEALTH_OK, print DIR/ceph.conf
#   cluster.sh stop DIR                stop every daemon (TERM, then KILL)
#   cluster.sh kill-osd DIR N          SIGKILL osd.N
#   cluster.sh start-osd DIR N         start osd.N again (same data)
#   cluster.sh status DIR              ceph -s
#   cluster.sh destroy DIR             stop and rm -rf DIR
#
# Environment: POOL (default auxstore), OSD_SIZE_GB (default 8; sparse),
# HEALTH_TIMEOUT (s, default 180), STOP_TIMEOUT (s, default 30).
# Ports are fixed (mon 3300/6789, osd/mgr 6800-7300): one cluster at a time.
# Progress goes to stderr; `start` prints only the conf path on stdout.
set -euo pipefail

POOL="${POOL:-auxstore}"
OSD_SIZE_GB="${OSD_SIZE_GB:-8}"
HEALTH_TIMEOUT="${HEALTH_TIMEOUT:-180}"
STOP_TIMEOUT="${STOP_TIMEOUT:-30}"
NUM_OSD=3
MON_ID=a
MGR_ID=x
MARKER="# auxstore local test cluster (scripts/ceph/cluster.sh)"
PACKAGES=(ceph-mon ceph-osd ceph-mgr ceph-common librados-dev libradospp-dev)

T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
say() { printf 'cluster.sh [%5ss]: %s\n' "$(elapsed)" "$*" >&2; }

# fail "message" [logfile...]: print what failed, the tail of each log, exit 1.
fail() {
  local msg=$1; shift
  printf 'cluster.sh: ERROR: %s\n' "$msg" >&2
  local f
  for f in "$@"; do
    if [ -s "$f" ]; then
      printf -- '----- last lines of %s -----\n' "$f" >&2
      grep -v '^[[:space:]]*$' "$f" | tail -n 25 >&2
      printf -- '-----\n' >&2
    fi
  done
  exit 1
}

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------- paths
set_dir() {
  [ -n "${1:-}" ] || usage
  case "$1" in /*) DIR=$1 ;; *) DIR=$(pwd)/$1 ;; esac
  DIR=${DIR%/}
  CONF=$DIR/ceph.conf
  LOG=$DIR/log
  RUN=$DIR/run
}

daemon_log() { # type id
  echo "$LOG/ceph-$1.$2.log"
}

cephc() { # ceph CLI against this cluster, never hangs for long
  timeout 40 ceph -c "$CONF" --connect-timeout 15 "$@"
}

# ------------------------------------------------------------- processes
# pid of a daemon of THIS cluster (type mon|mgr|osd, id) or empty.
# The pid file is tried first; its process must really be that daemon
# (pid reuse), otherwise /proc is scanned for the exact command line.
daemon_pid() {
  local type=$1 id=$2 pidf="$RUN/$1.$2.pid" pid want cmd
  want="ceph-$type -c $CONF -i $id"
  if [ -f "$pidf" ]; then
    pid=$(cat "$pidf" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ]; then
      cmd=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null || true)
      if [ "${cmd% }" = "$want" ]; then echo "$pid"; return; fi
    fi
  fi
  for f in /proc/[0-9]*/cmdline; do
    cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null || true)
    if [ "${cmd% }" = "$want" ]; then
      pid=${f#/proc/}; echo "${pid%/cmdline}"; return
    fi
  done
}

# every ceph-mon/mgr/osd on this machine, whatever cluster: "pid cmdline"
all_ceph_daemons() {
  local f comm cmd pid
  for f in /proc/[0-9]*; do
    comm=$({ cat "$f/comm"; } 2>/dev/null || true)
    case "$comm" in
      ceph-mon|ceph-mgr|ceph-osd)
        # a stopped daemon may linger as a zombie until its reaper runs
        [ "$({ awk '{print $3}' "$f/stat"; } 2>/dev/null)" = Z ] && continue
        cmd=$({ tr '\0' ' ' <"$f/cmdline"; } 2>/dev/null || true)
        pid=${f#/proc/}
        echo "$pid $cmd"
        ;;
    esac
  done
}

wait_gone() { # pid timeout_s -> 0 when gone
  local pid=$1 t=$2 i
  for ((i = 0; i < t * 10; i++)); do
    [ -d "/proc/$pid" ] || return 0
    # a zombie child of ours counts as gone
    if [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ]; then return 0; fi
    sleep 0.1
  done
  return 1
}

# ------------------------------------------------------------- config
write_conf() {
  local fsid=$1
  cat >"$CONF" <<EOF
$MARKER
# Daemons and clients both read this file.  Clients: \`-c $CONF\`.
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_ipv4 = true
ms_bind_ipv6 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $RUN
pid_file = $RUN/\$type.\$id.pid
# no /var/log/ceph, no crash dumps outside DIR
crash_dir = $DIR/crash
# replicas spread over OSDs of one host (must be known at mon mkfs)
osd_crush_chooseleaf_type = 0
osd_pool_default_size = 3
osd_pool_default_min_size = 2
osd_pool_default_pg_num = 32
osd_pool_default_pgp_num = 32
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_delete = true
# the disk may be fuller than 70%: don't turn that into HEALTH_WARN
mon_data_avail_warn = 5
mon_data_avail_crit = 1
mon_warn_on_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
# notice dead OSDs fast, even when every OSD is dead (no peer reports):
# beacons every 5 s, marked down after 20 s without one
osd_beacon_report_interval = 5
mon_osd_report_timeout = 20
mon_osd_min_down_reporters = 1
# memory: fixed small BlueStore cache; 896M is osd_memory_target's minimum
bluestore_cache_autotune = false
bluestore_cache_size = 64M
osd_memory_target = 896M

[mon]
mon_data = $DIR/mon.\$id
log_file = $LOG/ceph-\$type.\$id.log
mon_cluster_log_file = default=$LOG/ceph.\$channel.log cluster=$LOG/ceph.log

[mgr]
mgr_data = $DIR/mgr.\$id
log_file = $LOG/ceph-\$type.\$id.log

[osd]
osd_data = $DIR/osd.\$id
log_file = $LOG/ceph-\$type.\$id.log
osd_objectstore = bluestore
# the block file lies BESIDE the osd dir: inside it (osd_data/block) mkfs
# makes the symlink block -> itself and fails with ELOOP
bluestore_block_path = $DIR/osd.\$id.block
bluestore_block_create = true
bluestore_block_size = $((OSD_SIZE_GB * 1024 * 1024 * 1024))
bluestore_fsck_on_mount = false
# the block files sit on a disk the kernel calls rotational, so the OSDs take
# the hdd defaults, among them a 0.1 s sleep between recovery ops: after one
# OSD was down for 10 s under load, HEALTH_OK came back only after ~4 min
osd_recovery_sleep_hdd = 0
osd_recovery_sleep_ssd = 0
osd_recovery_sleep_hybrid = 0
osd_recovery_max_active = 8
osd_max_backfills = 4

[client]
# empty: two clients (or a client and the ceph CLI) don't fight over one
# admin socket file
admin_socket =
# fail instead of hanging when the cluster is gone
rados_osd_op_timeout = 10
rados_mon_op_timeout = 10
client_mount_timeout = 10
EOF
}

# ------------------------------------------------------------- daemons
start_daemon() { # type id
  local type=$1 id=$2 out="$LOG/$1.$2.start.out" pid
  pid=$(daemon_pid "$type" "$id")
  if [ -n "$pid" ]; then say "$type.$id already running (pid $pid)"; return 0; fi
  rm -f "$RUN/$type.$id.pid"
  # ceph-* daemonize by default: the parent returns once the child is
  # initialised (non-zero if init failed); the child writes pid_file.
  if ! "ceph-$type" -c "$CONF" -i "$id" >"$out" 2>&1; then
    fail "ceph-$type -i $id failed to start" "$out" "$(daemon_log "$type" "$id")"
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    pid=$(daemon_pid "$type" "$id")
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ] || fail "ceph-$type -i $id exited right after starting" "$out" "$(daemon_log "$type" "$id")"
  say "$type.$id started (pid $pid)"
}

# start the given OSDs at once (each start blocks ~3-5 s in BlueStore mount)
start_osds() {
  local id failed=0
  local -a pids=()
  for id in "$@"; do
    ( start_daemon osd "$id" ) &
    pids+=($!)
  done
  for id in "${!pids[@]}"; do wait "${pids[$id]}" || failed=1; done
  [ "$failed" = 0 ] || fail "starting the OSDs failed (see above)"
}

wait_mon() {
  local i
  for ((i = 0; i < 30; i++)); do
    if timeout 10 ceph -c "$CONF" --connect-timeout 5 mon stat >/dev/null 2>&1; then return 0; fi
    [ -n "$(daemon_pid mon "$MON_ID")" ] || fail "mon.$MON_ID died" "$(daemon_log mon "$MON_ID")"
    sleep 1
  done
  fail "mon.$MON_ID does not answer after 30 s" "$(daemon_log mon "$MON_ID")"
}

osd_up_count() {
  cephc osd stat -f json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("num_up_osds",0))' 2>/dev/null || echo 0
}

osd_is_up() { # id
  cephc osd dump -f json 2>/dev/null |
    python3 -c 'import json,sys
d=json.load(sys.stdin)
print(any(o["osd"]==int(sys.argv[1]) and o["up"]==1 for o in d["osds"]))' "$1" 2>/dev/null | grep -q True
}

wait_osds_up() { # timeout
  local t=$1 i n
  for ((i = 0; i < t; i++)); do
    n=$(osd_up_count)
    [ "$n" = "$NUM_OSD" ] && return 0
    local id
    for ((id = 0; id < NUM_OSD; id++)); do
      [ -n "$(daemon_pid osd $id)" ] || fail "osd.$id died while waiting for it to come up" "$(daemon_log osd $id)"
    done
    sleep 1
  done
  fail "only $(osd_up_count)/$NUM_OSD OSDs up after ${t}s" \
    "$(daemon_log osd 0)" "$(daemon_log osd 1)" "$(daemon_log osd 2)" "$(daemon_log mon $MON_ID)"
}

# all PGs active+clean according to the mgr?
pgs_clean() {
  cephc pg stat -f json 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); d=d.get("pg_summary",d)
n=d.get("num_pgs",0); st=d.get("num_pg_by_state",[])
clean=sum(s["num"] for s in st if s["name"]=="active+clean")
print("yes" if n>0 and clean==n else "no")' 2>/dev/null | grep -q yes
}

wait_health() {
  local i h
  for ((i = 0; i < HEALTH_TIMEOUT; i++)); do
    h=$(cephc health 2>/dev/null || true)
    if [ "${h%% *}" = HEALTH_OK ]; then
      say "HEALTH_OK after $(elapsed)s"
      return 0
    fi
    sleep 1
  done
  if pgs_clean; then
    say "WARNING: not HEALTH_OK after ${HEALTH_TIMEOUT}s but all PGs active+clean:"
    cephc health detail >&2 || true
    return 0
  fi
  cephc -s >&2 || true
  cephc health detail >&2 || true
  fail "cluster not healthy after ${HEALTH_TIMEOUT}s" "$(daemon_log mgr $MGR_ID)" "$(daemon_log mon $MON_ID)"
}

check_nothing_running() {
  local others
  others=$(all_ceph_daemons)
  if [ -n "$others" ]; then
    if echo "$others" | grep -qF -- "-c $CONF "; then
      printf '%s\n' "$others" >&2
      fail "the cluster in $DIR (or part of it) is already running; use 'stop $DIR' first (or start-osd for one OSD)"
    fi
    printf '%s\n' "$others" >&2
    fail "another Ceph cluster is running on this machine (daemons above); only one at a time (fixed ports). Stop it with 'cluster.sh stop <its DIR>'"
  fi
  local busy
  busy=$(ss -Hltnp 2>/dev/null | awk '$4 ~ /:(3300|6789)$/' || true)
  if [ -n "$busy" ]; then
    printf '%s\n' "$busy" >&2
    fail "port 3300 or 6789 (ceph mon) is already in use by the listener(s) above"
  fi
}

check_installed() {
  local b
  for b in ceph ceph-mon ceph-mgr ceph-osd monmaptool ceph-authtool; do
    command -v "$b" >/dev/null || fail "$b not found; run '$0 install' first"
  done
}

# ------------------------------------------------------------- commands
cmd_install() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "all packages present: ${PACKAGES[*]} ($(dpkg-query -W -f='${Version}' ceph-common))"
    return 0
  fi
  say "installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || fail "apt-get update failed"
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    fail "apt-get install ${missing[*]} failed"
  [ -f /usr/include/rados/librados.hpp ] || fail "/usr/include/rados/librados.hpp missing after install"
  say "installed in $(elapsed)s"
}

create_cluster() {
  local fsid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  mkdir -p "$DIR" "$LOG" "$RUN" "$DIR/crash" "$DIR/mon.$MON_ID" "$DIR/mgr.$MGR_ID"
  write_conf "$fsid"
  say "creating cluster $fsid in $DIR"

  monmaptool --create --fsid "$fsid" --addv "$MON_ID" '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' \
    "$DIR/monmap" >"$LOG/monmaptool.out" 2>&1 || fail "monmaptool failed" "$LOG/monmaptool.out"
  # the keyring is only for mkfs (auth none needs no keys afterwards)
  ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' \
    >"$LOG/authtool.out" 2>&1 || fail "ceph-authtool failed" "$LOG/authtool.out"
  ceph-mon -c "$CONF" -i "$MON_ID" --mkfs --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring" \
    >"$LOG/mon.mkfs.out" 2>&1 || fail "ceph-mon --mkfs failed" "$LOG/mon.mkfs.out" "$(daemon_log mon $MON_ID)"

  start_daemon mon "$MON_ID"
  wait_mon
  start_daemon mgr "$MGR_ID"

  # ids first (sequential, they must be 0..2), then the slow BlueStore
  # mkfs of all OSDs in parallel (~5 s each), then start them
  local id uuid got
  local -a mkpids=()
  for ((id = 0; id < NUM_OSD; id++)); do
    uuid=$(cat /proc/sys/kernel/random/uuid)
    got=$(cephc osd new "$uuid" 2>"$LOG/osd.$id.new.out") || fail "ceph osd new failed" "$LOG/osd.$id.new.out"
    [ "$got" = "$id" ] || fail "ceph osd new gave id '$got', expected $id"
    mkdir -p "$DIR/osd.$id"
    ceph-osd -c "$CONF" -i "$id" --mkfs --osd-uuid "$uuid" >"$LOG/osd.$id.mkfs.out" 2>&1 &
    mkpids[id]=$!
  done
  for ((id = 0; id < NUM_OSD; id++)); do
    wait "${mkpids[id]}" ||
      fail "ceph-osd -i $id --mkfs failed" "$LOG/osd.$id.mkfs.out" "$(daemon_log osd $id)"
  done
  start_osds $(seq 0 $((NUM_OSD - 1)))
  wait_osds_up 90

  cephc osd pool create "$POOL" 32 32 replicated >"$LOG/pool.out" 2>&1 || fail "pool create $POOL failed" "$LOG/pool.out"
  cephc osd pool set "$POOL" size 3 >>"$LOG/pool.out" 2>&1 || fail "pool set size failed" "$LOG/pool.out"
  cephc osd pool set "$POOL" min_size 2 >>"$LOG/pool.out" 2>&1 || fail "pool set min_size failed" "$LOG/pool.out"
  cephc osd pool application enable "$POOL" rados >>"$LOG/pool.out" 2>&1 ||
    fail "pool application enable failed" "$LOG/pool.out"
  wait_health
  touch "$DIR/.initialized"
}

restart_cluster() {
  say "restarting the stopped cluster in $DIR"
  local id
  start_daemon mon "$MON_ID"
  wait_mon
  start_daemon mgr "$MGR_ID"
  start_osds $(seq 0 $((NUM_OSD - 1)))
  wait_osds_up 90
  wait_health
}

cmd_start() {
  set_dir "${1:-}"
  check_installed
  check_nothing_running
  if [ -f "$DIR/.initialized" ]; then
    grep -qxF "$MARKER" "$CONF" 2>/dev/null || fail "$CONF is not a cluster.sh conf"
    restart_cluster
  elif [ -d "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    fail "$DIR is not empty and holds no finished cluster (a failed start?); run 'destroy $DIR' or pick another DIR"
  else
    create_cluster
  fi
  say "up in $(elapsed)s; clients use: -c $CONF (pool $POOL)"
  echo "$CONF"
}

# stop a list of "type id" daemons: TERM all, wait, KILL the rest
stop_set() {
  local -a pids=() names=()
  local type id pid
  while [ $# -gt 0 ]; do
    type=$1 id=$2; shift 2
    pid=$(daemon_pid "$type" "$id")
    [ -n "$pid" ] || continue
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid"); names+=("$type.$id")
  done
  local i
  for i in "${!pids[@]}"; do
    if wait_gone "${pids[$i]}" "$STOP_TIMEOUT"; then
      say "${names[$i]} stopped"
    else
      say "${names[$i]} (pid ${pids[$i]}) ignored SIGTERM for ${STOP_TIMEOUT}s: SIGKILL"
      kill -KILL "${pids[$i]}" 2>/dev/null || true
      wait_gone "${pids[$i]}" 10 || fail "${names[$i]} (pid ${pids[$i]}) survives SIGKILL"
    fi
  done
}

cmd_stop() {
  set_dir "${1:-}"
  [ -f "$CONF" ] || fail "no cluster in $DIR ($CONF missing)"
  local args=() id
  for ((id = 0; id < NUM_OSD; id++)); do args+=(osd "$id"); done
  # OSDs first (they tell the mon they go down), then mgr, then mon
  stop_set "${args[@]}"
  stop_set mgr "$MGR_ID"
  stop_set mon "$MON_ID"
  say "cluster in $DIR stopped (data kept)"
}

check_osd_id() {
  case "${1:-}" in [0-9]) ;; *) fail "OSD id must be 0..$((NUM_OSD - 1)), got '${1:-}'" ;; esac
  [ "$1" -lt "$NUM_OSD" ] || fail "OSD id must be 0..$((NUM_OSD - 1)), got '$1'"
}

cmd_kill_osd() {
  set_dir "${1:-}"; check_osd_id "${2:-}"
  local pid
  pid=$(daemon_pid osd "$2")
  [ -n "$pid" ] || fail "osd.$2 of $DIR is not running"
  kill -KILL "$pid"
  wait_gone "$pid" 10 || fail "osd.$2 (pid $pid) survives SIGKILL"
  say "osd.$2 (pid $pid) killed"
}

cmd_start_osd() {
  set_dir "${1:-}"; check_osd_id "${2:-}"
  [ -f "$DIR/.initialized" ] || fail "no finished cluster in $DIR"
  [ -n "$(daemon_pid mon "$MON_ID")" ] || fail "mon.$MON_ID of $DIR is not running; use 'start $DIR'"
  start_daemon osd "$2"
  local i
  for ((i = 0; i < 60; i++)); do
    if osd_is_up "$2"; then say "osd.$2 up after $(elapsed)s"; return 0; fi
    [ -n "$(daemon_pid osd "$2")" ] || fail "osd.$2 died after start" "$(daemon_log osd "$2")"
    sleep 1
  done
  fail "osd.$2 not marked up after 60 s" "$(daemon_log osd "$2")" "$(daemon_log mon $MON_ID)"
}

cmd_status() {
  set_dir "${1:-}"
  [ -f "$CONF" ] || fail "no cluster in $DIR ($CONF missing)"
  local type id pid state type_id
  for type_id in "mon $MON_ID" "mgr $MGR_ID" "osd 0" "osd 1" "osd 2"; do
    read -r type id <<<"$type_id"
    pid=$(daemon_pid "$type" "$id")
    if [ -n "$pid" ]; then state="pid $pid"; else state="not running"; fi
    printf '%-6s %s\n' "$type.$id" "$state" >&2
  done
  [ -n "$(daemon_pid mon "$MON_ID")" ] || fail "mon.$MON_ID is not running: no status"
  cephc -s || fail "ceph -s failed" "$(daemon_log mon $MON_ID)"
}

cmd_destroy() {
  set_dir "${1:-}"
  if [ ! -e "$DIR" ]; then say "$DIR absent"; return 0; fi
  if [ -f "$CONF" ]; then
    grep -qxF "$MARKER" "$CONF" || fail "$CONF was not written by cluster.sh; not removing $DIR"
    cmd_stop "$DIR"
  elif [ -n "$(ls -A "$DIR")" ]; then
    fail "$DIR holds no cluster.sh cluster; not removing it"
  fi
  rm -rf -- "$DIR"
  say "$DIR removed"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  kill-osd) cmd_kill_osd "${2:-}" "${3:-}" ;;
  start-osd) cmd_start_osd "${2:-}" "${3:-}" ;;
  status) cmd_status "${2:-}" ;;
  destroy) cmd_destroy "${2:-}" ;;
  *) usage ;;
esac
