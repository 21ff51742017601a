#!/usr/bin/env bash
# Show that no RTPS (DDS) packet leaves through a non-loopback interface while a ROS 2
# publisher/subscriber pair runs under the project's environment.
#
# Usage (as root; installs tcpdump with apt if it is missing):
#   ./dev check-network            run the check, fail if it cannot run
#   ./dev check-network --if-possible   (used by ./dev test) skip with a note when not root
#
# Two parts, both with a capture filter matching the RTPS magic ("RTPS" at the start of
# the UDP payload):
#  1. Control, inside a private network namespace with its own veth pair (no route to
#     the machine's real network): the pair WITHOUT the profile must show RTPS packets on
#     the veth (proves the capture sees DDS discovery), and WITH the profile none.
#  2. On this machine's real non-loopback interfaces, the pair WITH the project's profile:
#     zero RTPS packets. (The no-profile case is never run on real interfaces.)
# In each run the subscriber must receive messages, so "no packets" is not "no DDS".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IF_POSSIBLE=0; [ "${1:-}" = "--if-possible" ] && IF_POSSIBLE=1
PY="${HIL_VENV:-$ROOT/.venv}/bin/python"
PROFILE="${FASTRTPS_DEFAULT_PROFILES_FILE:-${HIL_VENV:-$ROOT/.venv}/share/hil_common/config/fastdds_loopback.xml}"
SECONDS_RUN=6
PAIR_GRACE=20
RTPS_FILTER='udp and udp[8:4] = 0x52545053'
NS="hil-ddscheck-$$"
TMP="$(mktemp -d)"

say() { printf '[check-network] %s\n' "$*" >&2; }
skip_or_fail() {
  if [ "$IF_POSSIBLE" = 1 ]; then say "skipped: $*"; exit 0; fi
  say "cannot run: $*"; exit 2
}
cleanup() { ip netns del "$NS" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

[ "$(id -u)" = 0 ] || skip_or_fail "needs root (tcpdump and network namespaces)"
if ! command -v tcpdump >/dev/null 2>&1; then
  say "installing tcpdump with apt"
  (apt-get update -qq && apt-get install -y -qq tcpdump) >/dev/null 2>&1 || skip_or_fail "tcpdump is not installed and apt could not install it"
fi
command -v ip >/dev/null 2>&1 || skip_or_fail "iproute2 (ip) is not installed"
[ -f "$PROFILE" ] || { say "profile $PROFILE not found (run ./dev setup)"; exit 2; }

DOMAIN=$(( ( $$ % 90 ) + 110 ))
base_env=(env -u FASTRTPS_DEFAULT_PROFILES_FILE -u FASTDDS_DEFAULT_PROFILES_FILE
          RMW_IMPLEMENTATION=rmw_fastrtps_cpp ROS_DOMAIN_ID="$DOMAIN" ROS_LOG_DIR="$TMP/log"
          AMENT_PREFIX_PATH="${AMENT_PREFIX_PATH:-}")

# run_pair <label> <netns or ""> <iface list> <with_profile 0|1>  -> prints packet count
run_pair() {
  local label="$1" ns="$2" ifaces="$3" with_profile="$4"
  local exec_prefix=() envs=("${base_env[@]}") pids=() iface n total=0
  [ -n "$ns" ] && exec_prefix=(ip netns exec "$ns")
  [ "$with_profile" = 1 ] && envs+=(FASTRTPS_DEFAULT_PROFILES_FILE="$PROFILE")
  for iface in $ifaces; do
    "${exec_prefix[@]}" tcpdump -i "$iface" -n -p -U -w "$TMP/$label-$iface.pcap" "$RTPS_FILTER" 2>/dev/null &
    pids+=($!)
  done
  sleep 1
  # Each member is killed if it has not exited PAIR_GRACE s after its run: once (in a fresh clone's ./dev test)
  # the publisher spun at full CPU in its shutdown for minutes after the subscriber had its messages, and the
  # check, and the suite with it, waited on it.
  timeout -k 5 "$((SECONDS_RUN + PAIR_GRACE))" "${exec_prefix[@]}" "${envs[@]}" "$PY" "$ROOT/tools/dds_pair.py" pub \
    "$SECONDS_RUN" >/dev/null 2>&1 &
  local pub=$!
  timeout -k 5 "$((SECONDS_RUN + PAIR_GRACE))" "${exec_prefix[@]}" "${envs[@]}" "$PY" "$ROOT/tools/dds_pair.py" sub \
    "$SECONDS_RUN" > "$TMP/$label-sub.txt" 2>&1
  local sub_rc=$?
  if { [ "$sub_rc" = 124 ] || [ "$sub_rc" = 137 ]; } && grep -q 'received [1-9]' "$TMP/$label-sub.txt"; then
    say "$label: note: the subscriber did not exit within ${PAIR_GRACE} s of its run and was killed"
    sub_rc=0                 # it had its messages: DDS worked
  fi
  wait "$pub"
  local pub_rc=$?
  if [ "$pub_rc" = 124 ] || [ "$pub_rc" = 137 ]; then
    say "$label: note: the publisher did not exit within ${PAIR_GRACE} s of its run and was killed"
  fi
  sleep 1
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  for iface in $ifaces; do
    n=$(tcpdump -r "$TMP/$label-$iface.pcap" -n 2>/dev/null | wc -l)
    total=$((total + n))
    say "$label: $n RTPS packets on $iface"
  done
  say "$label: $(cat "$TMP/$label-sub.txt")"
  [ "$sub_rc" = 0 ] || { say "$label: the subscriber received nothing: DDS did not work"; echo "ERR"; return; }
  echo "$total"
}

status=0
# 1. Control in a private namespace: veth pair, multicast route, no link to the host.
if ip netns add "$NS" 2>/dev/null; then
  ip -n "$NS" link set lo up
  ip -n "$NS" link add hilv0 type veth peer name hilv1
  ip -n "$NS" addr add 10.254.254.1/30 dev hilv0
  ip -n "$NS" addr add 10.254.254.2/30 dev hilv1
  ip -n "$NS" link set hilv0 up && ip -n "$NS" link set hilv1 up
  ip -n "$NS" route add 224.0.0.0/4 dev hilv0
  without=$(run_pair control-without-profile "$NS" hilv0 0)
  with=$(run_pair control-with-profile "$NS" hilv0 1)
  if [ "$without" = ERR ] || [ "$with" = ERR ]; then status=1
  elif [ "$without" -eq 0 ]; then say "FAIL: the capture saw no RTPS without the profile; the check would be blind"; status=1
  elif [ "$with" -ne 0 ]; then say "FAIL: RTPS left through the namespace's veth WITH the profile"; status=1
  else say "control OK: $without RTPS packets without the profile, 0 with it"; fi
  ip netns del "$NS"
else
  say "note: could not create a network namespace; control part not run"
fi

# 2. The machine's real interfaces, with the project's profile only.
real_ifaces=$(ip -o link show up | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -v '^lo$' | tr '\n' ' ')
if [ -n "$real_ifaces" ]; then
  real=$(run_pair host-with-profile "" "$real_ifaces" 1)
  if [ "$real" = ERR ]; then status=1
  elif [ "$real" -ne 0 ]; then say "FAIL: $real RTPS packets left through $real_ifaces with the project's profile"; status=1
  else say "host OK: 0 RTPS packets on $real_ifaces while the pair talked over loopback"; fi
else
  say "no non-loopback interface is up; nothing can leave the machine"
fi
[ "$status" = 0 ] && say "PASS: loopback-only DDS" || say "FAILED"
exit "$status"
