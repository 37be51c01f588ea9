#!/usr/bin/env bash
# ctest's fixture for the tests labelled `ceph`: the one local cluster of
# scripts/ceph/cluster.sh (fixed ports: one per machine at a time) under DIR.
#   ceph_fixture.sh start DIR   destroy what an earlier run left in DIR, then
#                               create the cluster and wait for HEALTH_OK
#   ceph_fixture.sh stop DIR    stop the daemons and remove DIR
# A cluster that cannot start fails the setup, and with it every ceph test.
set -euo pipefail
cluster="$(cd "$(dirname "$0")/../../scripts/ceph" && pwd)/cluster.sh"
case "${1:-}:${2:-}" in
  start:?*)
    "$cluster" destroy "$2"
    "$cluster" start "$2" >/dev/null
    ;;
  stop:?*) "$cluster" destroy "$2" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
