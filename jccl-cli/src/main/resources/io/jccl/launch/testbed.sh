#!/usr/bin/env bash
# A multi-host test bed on one machine (needs root): H simulated hosts, each with its own network namespace
# (address 10.213.7.<i+1>/24 on eth0, joined by veth pairs on a bridge that lives in a namespace of its own), its
# own UTS namespace (host name bed-h<i>), its own mount namespace with a private /dev/shm and its own /etc/hosts,
# and an optional egress rate limit (tc tbf). No address is routed outside the bed's namespaces.
#
#   scripts/testbed.sh up H [--rate 1gbit] [--resolvable]   build the bed (host names do not resolve by default,
#                                                            as in many containers; --resolvable lists them all)
#   scripts/testbed.sh exec I CMD [ARGS...]                  run CMD on host I (in all of its namespaces)
#   scripts/testbed.sh addr I                                print host I's address
#   scripts/testbed.sh down                                  remove every namespace, process and file of the bed
#   scripts/testbed.sh status                                list the hosts that are up
#
# One bed at a time on a machine: its names and addresses are fixed. A program that owns the bed it builds (jccl
# bench, verify, tune, the tests) sets JCCL_TESTBED_OWNER to its pid: another owner's "up" then fails while that
# process lives, rather than killing its ranks, and its "down" leaves that bed alone. Without JCCL_TESTBED_OWNER
# (by hand), "down" removes whatever bed is up.
set -Eeuo pipefail
state="${JCCL_TESTBED_DIR:-/run/jccl-testbed}"
owner="${JCCL_TESTBED_OWNER:-}"
net=10.213.7
sw=jcclbed-sw

die() { echo "testbed: $*" >&2; exit 2; }
# a command that fails under set -e says which, and where
trap 'rc=$?; echo "testbed: line $LINENO: \"$BASH_COMMAND\" failed (exit $rc); as root, the bed needs network and mount namespaces (in a container: --privileged, or --cap-add SYS_ADMIN,NET_ADMIN) and, for --rate, the tbf qdisc (modprobe sch_tbf)" >&2' ERR
need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (network and mount namespaces)"; }
need_tools() {
  for t in ip tc unshare nsenter flock; do
    command -v "$t" >/dev/null 2>&1 || die "missing '$t': apt-get install -y iproute2 util-linux"
  done
}
addr() { echo "$net.$(( $1 + 1 ))"; }

# the sleep that holds host $1's namespaces: in its network namespace, with a UTS namespace of its own
anchor_of() {
  local mine p
  mine="$(readlink /proc/self/ns/uts)"
  for p in $(ip netns pids "$1" 2>/dev/null); do
    if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = sleep ] && [ "$(readlink /proc/"$p"/ns/uts 2>/dev/null)" != "$mine" ]; then
      echo "$p"
      return 0
    fi
  done
  return 0
}

# the live process other than this script's owner that owns the bed that is up, if any
other_owner() {
  local o
  o="$(cat "$state/owner" 2>/dev/null || true)"
  if [ -n "$o" ] && [ "$o" != "$owner" ] && kill -0 "$o" 2>/dev/null; then echo "$o"; fi
  return 0
}

remove() {
  # every process left in a namespace of the bed (the hosts' anchors too, pidfile or not), until none is left (one
  # forked meanwhile would keep a namespace alive with no name), then the namespaces
  local ns p left
  for _ in 1 2 3 4 5; do
    left=0
    for ns in $(ip netns list 2>/dev/null | awk '/^jcclbed-/ {print $1}'); do
      for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; left=1; done
    done
    [ "$left" -eq 0 ] && break
    sleep 0.1
  done
  for ns in $(ip netns list 2>/dev/null | awk '/^jcclbed-/ {print $1}'); do ip netns delete "$ns" 2>/dev/null || true; done
  rm -f "$state"/h*.pid "$state"/h*.hosts "$state"/h*.err "$state/hosts" "$state/owner"
  rmdir "$state" 2>/dev/null || true
  if ip netns list 2>/dev/null | grep -q '^jcclbed-'; then die "could not remove: $(ip netns list | grep '^jcclbed-' | tr '\n' ' ')"; fi
}

down() {
  local o
  o="$(other_owner)"
  if [ -n "$owner" ] && [ -n "$o" ]; then
    echo "testbed: left up: the bed belongs to process $o"
    return 0
  fi
  remove
}

up() {
  local hosts="$1"; shift
  local rate="" resolvable=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) rate="$2"; shift 2 ;;
      --resolvable) resolvable=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  # 16: the tools check it up front (Bed.MAX_HOSTS)
  [ "$hosts" -ge 1 ] && [ "$hosts" -le 16 ] || die "between 1 and 16 hosts, got $hosts"
  local o
  o="$(other_owner)"
  [ -z "$o" ] || die "a test bed is already up, and its owner lives: process $o ($(tr '\0' ' ' < /proc/"$o"/cmdline 2>/dev/null | cut -c1-200)); one bed at a time on a machine: wait for it, or take it down with 'scripts/testbed.sh down'"
  remove
  mkdir -p "$state"
  echo "$owner" > "$state/owner"
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  ip -n "$sw" link set lo up
  for i in $(seq 0 $(( hosts - 1 ))); do
    local ns="jcclbed-h$i"
    ip netns add "$ns"
    # both ends made in their namespaces at once: a pair made in the root namespace and moved after was left there
    # by a kill in between, and every later "up" then failed with "File exists"
    ip link add "bedh$i" netns "$ns" type veth peer name "bedp$i" netns "$sw"
    ip -n "$sw" link set "bedp$i" master br0 up
    ip -n "$ns" link set "bedh$i" name eth0
    ip -n "$ns" addr add "$(addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$rate" ]; then
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
    fi
    {
      echo "127.0.0.1 localhost"
      echo "::1 localhost"
      if [ "$resolvable" -eq 1 ]; then
        for j in $(seq 0 $(( hosts - 1 ))); do echo "$(addr "$j") bed-h$j"; done
      fi
    } > "$state/h$i.hosts"
    # the host's anchor: holds its UTS and mount namespaces (private /dev/shm, its /etc/hosts) for every exec
    # (set -e: a host whose name or mounts failed must not come up sharing this machine's /dev/shm and /etc/hosts)
    ip netns exec "$ns" unshare --uts --mount --propagation private sh -ec '
      hostname "bed-h'"$i"'"
      mount -t tmpfs -o size=2g tmpfs /dev/shm
      mount --bind "'"$state/h$i.hosts"'" /etc/hosts
      exec sleep infinity' </dev/null >/dev/null 2>"$state/h$i.err" 9>&- &
    local anchor=$!
    # the anchor is unshare's child once it has exec'd sleep: find the sleep inside the namespace
    local pid=""
    for _ in $(seq 1 100); do
      pid="$(anchor_of "$ns")"
      [ -n "$pid" ] && break
      sleep 0.05
    done
    [ -n "$pid" ] || die "host $i did not come up (anchor $anchor): $(cat "$state/h$i.err" 2>/dev/null)"
    echo "$pid" > "$state/h$i.pid"
  done
  echo "$hosts" > "$state/hosts"
  echo "testbed: $hosts hosts up (${rate:-no rate limit}, host names $([ "$resolvable" -eq 1 ] && echo resolvable || echo unresolvable)): $(for i in $(seq 0 $(( hosts - 1 ))); do printf 'bed-h%s=%s ' "$i" "$(addr "$i")"; done)"
}

run_on() {
  local i="$1"; shift
  [ -f "$state/h$i.pid" ] || die "host $i is not up (scripts/testbed.sh up H first)"
  local pid
  pid="$(cat "$state/h$i.pid")"
  # the anchor may be gone and its pid another process's: never run on this machine's own namespaces
  [ "$(ip netns identify "$pid" 2>/dev/null)" = "jcclbed-h$i" ] || die "host $i is not up: its anchor (process $pid) is gone (scripts/testbed.sh up H again)"
  exec nsenter -t "$pid" --net --uts --mount -- "$@"
}

# up and down one at a time on this machine (the hosts' anchors close the lock's descriptor: they would hold it)
locked() {
  exec 9>>"${state%/}.lock"
  flock -w 120 9 || die "another testbed up or down held ${state%/}.lock for 120 s"
  "$@"
}

cmd="${1:-}"; shift || true
case "$cmd" in
  up) need_root; need_tools; locked up "$@" ;;
  down) need_root; locked down ;;
  exec) need_root; run_on "$@" ;;
  addr) addr "$1" ;;
  status) [ -f "$state/hosts" ] && echo "$(cat "$state/hosts") hosts up" || echo "down" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
