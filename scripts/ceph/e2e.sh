#!/usr/bin/env bash
# End-to-end check of cluster.sh and the librados probe, printing the
# figures quoted in README.md.  Heavy for ~4 minutes (benches), then
# destroys the cluster.  Usage: e2e.sh [DIR]   (default /tmp/cephtest)
# Logs: $E2E_OUT (default /tmp/ceph-e2e.<pid>); figures in figures.txt there.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CL=$HERE/cluster.sh
PROBE=$HERE/probe/probe
DIR=${1:-/tmp/cephtest}
export POOL=${POOL:-auxstore}
OUTD=${E2E_OUT:-/tmp/ceph-e2e.$$}
mkdir -p "$OUTD"
: >"$OUTD/figures.txt"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
step() { printf '\n=== %s\n' "$*"; }
fig() { printf 'FIGURE %s\n' "$*" | tee -a "$OUTD/figures.txt"; }
die() { printf 'e2e: FAILED: %s\n' "$*" >&2; exit 1; }

cleanup_bg() {
  local p
  for p in ${BG_PIDS:-}; do kill "$p" 2>/dev/null || true; done
}
trap cleanup_bg EXIT
BG_PIDS=""

wait_line() { # file regex timeout
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

daemon_rss_mib() { # sum of RSS of this cluster's daemons
  local f total=0 kb
  for f in /proc/[0-9]*; do
    if { tr '\0' ' ' <"$f/cmdline"; } 2>/dev/null | grep -qE "^ceph-(mon|mgr|osd) -c $DIR/ceph.conf "; then
      kb=$(awk '/^VmRSS/{print $2}' "$f/status" 2>/dev/null || echo 0)
      total=$((total + kb))
    fi
  done
  echo $((total / 1024))
}

osd_up() { # id -> prints 1/0
  ceph -c "$CONF" osd dump -f json 2>/dev/null |
    python3 -c 'import json,sys
d=json.load(sys.stdin); print([o["up"] for o in d["osds"] if o["osd"]==int(sys.argv[1])][0])' "$1"
}

num_up() {
  ceph -c "$CONF" osd stat -f json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])'
}

wait_health_ok() { # timeout -> prints seconds or dies
  local t0 i
  t0=$(now)
  for ((i = 0; i < $1; i++)); do
    if ceph -c "$CONF" health 2>/dev/null | grep -q '^HEALTH_OK'; then since "$t0"; return 0; fi
    sleep 1
  done
  ceph -c "$CONF" health detail >&2 || true
  die "no HEALTH_OK within $1 s"
}

step "install"
t=$(now); "$CL" install; fig "install (or the present-check): $(since "$t") s"

step "fresh DIR $DIR"
"$CL" destroy "$DIR"
make -s -C "$HERE/probe" probe

step "start"
t=$(now)
CONF=$("$CL" start "$DIR")
fig "start from empty DIR to HEALTH_OK: $(since "$t") s"
[ "$CONF" = "$DIR/ceph.conf" ] || die "start printed '$CONF'"
sleep 10
fig "idle RSS of mon+mgr+3 osd, 10 s after HEALTH_OK: $(daemon_rss_mib) MiB"
"$CL" status "$DIR" >"$OUTD/status1.txt" 2>&1

step "a second start must be refused"
if "$CL" start "/tmp/ceph-e2e-other.$$" >"$OUTD/second-start.txt" 2>&1; then
  die "a second cluster start succeeded"
fi
grep ERROR "$OUTD/second-start.txt"
[ ! -e "/tmp/ceph-e2e-other.$$" ] || die "refused start created its DIR"
if "$CL" start "$DIR" >"$OUTD/same-start.txt" 2>&1; then die "start of a running DIR succeeded"; fi
grep ERROR "$OUTD/same-start.txt"

step "object written before everything (checked after restarts)"
head -c 1048576 /dev/urandom >"$OUTD/persist.bin"
rados -c "$CONF" -p "$POOL" put e2e.persist "$OUTD/persist.bin"
rados -c "$CONF" -p "$POOL" setomapval e2e.persist key1 value1

step "probe api"
"$PROBE" "$CONF" "$POOL" api | tee "$OUTD/api.txt"
"$PROBE" "$CONF" "$POOL" limits | tee "$OUTD/limits.txt"

step "rados bench 4 MiB, 16 in flight"
fig "load average before benches: $(cut -d' ' -f1-3 /proc/loadavg)"
rados -c "$CONF" -p "$POOL" bench 10 write --no-cleanup -b 4194304 -t 16 >"$OUTD/bench-write.txt" 2>&1
rados -c "$CONF" -p "$POOL" bench 10 seq -t 16 >"$OUTD/bench-seq.txt" 2>&1
fig "rados bench 10 write 4 MiB -t 16: $(awk -F: '/^Bandwidth/{gsub(/ /,"",$2); print $2}' "$OUTD/bench-write.txt") MB/s, avg lat $(awk -F: '/^Average Latency/{gsub(/ /,"",$2); print $2}' "$OUTD/bench-write.txt") s"
fig "rados bench 10 seq -t 16: $(awk -F: '/^Bandwidth/{gsub(/ /,"",$2); print $2}' "$OUTD/bench-seq.txt") MB/s"
rados -c "$CONF" -p "$POOL" cleanup >/dev/null
"$PROBE" "$CONF" "$POOL" bench 64 16 | tee "$OUTD/probe-bench.txt"
while read -r line; do fig "probe $line"; done < <(grep RESULT "$OUTD/probe-bench.txt" | sed 's/^RESULT //')

step "kill -9 osd.1 during writes (rados bench 64 KiB -t 16 + probe load)"
tb=$(now)
"$PROBE" "$CONF" "$POOL" load 30 >"$OUTD/load.txt" 2>&1 &
LP=$!; BG_PIDS="$BG_PIDS $LP"
rados -c "$CONF" -p "$POOL" bench 25 write -b 65536 -t 16 --no-cleanup --run-name killbench \
  >"$OUTD/killbench.txt" 2>&1 &
BP=$!; BG_PIDS="$BG_PIDS $BP"
sleep 8
tk=$(now)
"$CL" kill-osd "$DIR" 1
pe=$(awk '/^load: start/{print $6}' "$OUTD/load.txt")
fig "osd.1 killed at t=$(awk -v a="${pe:-$tb}" -v b="$tk" 'BEGIN{printf "%.2f", b-a}') s of the probe load (its clock)"
for ((i = 0; i < 120; i++)); do
  [ "$(osd_up 1)" = 0 ] && break
  sleep 0.2
done
fig "mon marked osd.1 down $(since "$tk") s after kill -9 (t=$(awk -v a="${pe:-$tb}" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}') s)"
ceph -c "$CONF" health >"$OUTD/health-1dead.txt" 2>&1 || true
sleep 8
ts=$(now)
fig "start-osd 1 at t=$(awk -v a="${pe:-$tb}" -v b="$ts" 'BEGIN{printf "%.2f", b-a}') s of the probe load"
"$CL" start-osd "$DIR" 1
fig "start-osd 1 until marked up: $(since "$ts") s"
wait "$BP" || fig "rados bench during kill FAILED rc=$? (see killbench.txt)"
wait "$LP" || true
BG_PIDS=""
fig "rados bench write during kill: $(awk -F: '/^Bandwidth/{gsub(/ /,"",$2); print $2}' "$OUTD/killbench.txt") MB/s avg, max latency $(awk -F: '/^Max latency/{gsub(/ /,"",$2); print $2}' "$OUTD/killbench.txt") s, seconds with 0 MB/s: $(awk '$1 ~ /^[0-9]+$/ && NF >= 7 && $1 > 0 && $6 == 0 {n++} END{print n+0}' "$OUTD/killbench.txt")"
grep -E '^ +[0-9]+ +[0-9]+ ' "$OUTD/killbench.txt" | awk '{printf "%s:%s ", $1, $6} END{print ""}' >"$OUTD/killbench-persec.txt"
fig "rados bench per second (sec:cur MB/s): $(cat "$OUTD/killbench-persec.txt")"
while read -r line; do fig "$line"; done < <(grep -E 'RESULT|took' "$OUTD/load.txt" | sed 's/^RESULT //')
s=$(wait_health_ok 180) || die "no HEALTH_OK after start-osd"
fig "HEALTH_OK again (recovery) $s s after start-osd returned"
rados -c "$CONF" -p "$POOL" cleanup --run-name killbench >/dev/null

step "cluster unreachable: all OSDs killed, then mon+mgr stopped, client connected"
mkfifo "$OUTD/hold.in"
"$PROBE" "$CONF" "$POOL" hold <"$OUTD/hold.in" >"$OUTD/hold.txt" 2>&1 &
HP=$!; BG_PIDS="$BG_PIDS $HP"
exec 3>"$OUTD/hold.in"
wait_line "$OUTD/hold.txt" '^READY' 30 || die "probe hold not ready"
tk=$(now)
for i in 0 1 2; do "$CL" kill-osd "$DIR" "$i"; done
echo osds-killed >&3
for ((i = 0; i < 120; i++)); do
  [ "$(num_up)" = 0 ] && break
  sleep 0.5
done
fig "mon marked all 3 OSDs down $(since "$tk") s after kill -9 of all (no peers left to report)"
ceph -c "$CONF" health >"$OUTD/health-alldead.txt" 2>&1 || true
fig "health with every OSD down: $(head -c 200 "$OUTD/health-alldead.txt")"
wait_line "$OUTD/hold.txt" '\[osds-killed\] mon_command' 60 || die "hold ops (osds-killed) did not finish"
echo osds-marked-down >&3
wait_line "$OUTD/hold.txt" '\[osds-marked-down\] mon_command' 60 || die "hold ops (osds-marked-down) did not finish"
"$CL" stop "$DIR"
echo cluster-stopped >&3
wait_line "$OUTD/hold.txt" '\[cluster-stopped\] mon_command' 60 || die "hold ops (cluster-stopped) did not finish"
exec 3>&-
for ((i = 0; i < 300; i++)); do [ -d "/proc/$HP" ] || break; sleep 0.1; done
kill "$HP" 2>/dev/null && fig "probe hold: shutdown() did not return within 30 s"
BG_PIDS=""
while read -r line; do fig "hold $line"; done < <(grep -E 'RESULT|shutdown|connect' "$OUTD/hold.txt" | sed 's/^RESULT //')

step "connect while the cluster is stopped"
t=$(now)
"$PROBE" "$CONF" "$POOL" connect >"$OUTD/connect-down.txt" 2>&1 || true
fig "probe connect, cluster stopped: $(tr '\n' ' ' <"$OUTD/connect-down.txt")(wall $(since "$t") s)"
t=$(now)
rc=0; ceph -c "$CONF" -s >"$OUTD/ceph-s-down.txt" 2>&1 || rc=$?
fig "ceph -s, cluster stopped: rc $rc after $(since "$t") s: $(tail -1 "$OUTD/ceph-s-down.txt" | head -c 160)"

step "port conflict must be refused"
python3 -c 'import socket,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 6789)); s.listen(); time.sleep(60)' &
PP=$!; BG_PIDS="$BG_PIDS $PP"
sleep 1
if "$CL" start "$DIR" >"$OUTD/port-start.txt" 2>&1; then die "start with port 6789 taken succeeded"; fi
grep ERROR "$OUTD/port-start.txt"
kill "$PP"; wait "$PP" 2>/dev/null || true
BG_PIDS=""

step "restart after the hard kills: data still there?"
t=$(now)
"$CL" start "$DIR" >/dev/null
fig "restart (after kill -9 of all OSDs + stop) to HEALTH_OK: $(since "$t") s"
rados -c "$CONF" -p "$POOL" get e2e.persist "$OUTD/persist.got"
cmp "$OUTD/persist.bin" "$OUTD/persist.got" || die "e2e.persist differs after restart"
rados -c "$CONF" -p "$POOL" getomapval e2e.persist key1 2>&1 | grep -q 'value1' || die "omap lost"
fig "e2e.persist (1 MiB + omap) intact after kill -9 + restart"

step "clean stop + start"
t=$(now); "$CL" stop "$DIR"; fig "stop: $(since "$t") s"
"$CL" status "$DIR" >"$OUTD/status-stopped.txt" 2>&1 && die "status of a stopped cluster succeeded"
grep ERROR "$OUTD/status-stopped.txt"
t=$(now); "$CL" start "$DIR" >/dev/null; fig "restart after clean stop to HEALTH_OK: $(since "$t") s"
rm -f "$OUTD/persist.got"
rados -c "$CONF" -p "$POOL" get e2e.persist "$OUTD/persist.got"
cmp "$OUTD/persist.bin" "$OUTD/persist.got" || die "e2e.persist differs after clean restart"
"$PROBE" "$CONF" "$POOL" get e2e.persist >/dev/null
fig "e2e.persist intact after stop + start"
fig "disk used by DIR (sparse files): $(du -sh "$DIR" | cut -f1)"

step "destroy"
"$CL" destroy "$DIR"
[ ! -e "$DIR" ] || die "$DIR still there"
left=$(for f in /proc/[0-9]*; do
  c=$({ cat "$f/comm"; } 2>/dev/null || true)
  st=$({ awk '{print $3}' "$f/stat"; } 2>/dev/null || true)
  case "$c" in ceph-mon|ceph-mgr|ceph-osd) [ "$st" = Z ] || echo "${f#/proc/}" ;; esac
done)
[ -z "$left" ] || die "ceph daemons left: $left"
printf '\ne2e: all steps passed; figures in %s/figures.txt\n' "$OUTD"
