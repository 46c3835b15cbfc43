#!/usr/bin/env bash
# `cudoctor fleet collect --slurm` on a real Slurm: Debian's slurmctld, slurmd and munge, started
# on this host as a private cluster (own config, own munge socket and key, own ports) with three
# nodes in multiple-slurmd mode (one slurmd per node name), or one node where that mode is not
# available (recorded in the output). It checks that:
#   - every node's snapshot comes back through srun and the fleet report counts them;
#   - a node whose task fails (a task prolog that exits 3 on node2) is reported, not fatal;
#   - a node that hangs (a task prolog that sleeps on node3) is reported as timed out while the
#     other nodes' snapshots are kept;
#   - the sbatch equivalent (`srun cudoctor fleet node` in a batch script, then
#     `fleet collect --from-log` on its output file) gives the report, node2's failure included.
#
# Needs root (it installs the packages and runs the daemons). Without root or the packages it
# prints SKIPPED and exits 0, unless CUDOCTOR_REQUIRE_TOOLS=1 (as .ci/run sets): then it fails.
# Every wait is bounded; the daemons it started are stopped at exit, by their pids.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

skip() {
  if [ "${CUDOCTOR_REQUIRE_TOOLS:-0}" = 1 ]; then
    echo "slurm-test: FAILED: $1" >&2
    exit 1
  fi
  echo "slurm-test: SKIPPED: $1" >&2
  exit 0
}
fail() {
  echo "slurm-test: FAILED: $1" >&2
  [ -n "${work:-}" ] && for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root to run slurmctld, slurmd and munged"
need=(slurmctld slurmd srun sbatch scontrol sinfo munged)
missing() { for c in "${need[@]}"; do command -v "$c" >/dev/null || return 0; done; return 1; }
if missing; then
  command -v apt-get >/dev/null || skip "Slurm is not installed and there is no apt-get"
  echo "slurm-test: installing Debian's slurmctld, slurmd, slurm-client and munge" >&2
  export DEBIAN_FRONTEND=noninteractive
  { timeout 600 apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge ||
    { timeout 300 apt-get update && timeout 600 apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge; }
  } >/tmp/slurm-test-apt.log 2>&1 || skip "apt-get could not install Slurm (see /tmp/slurm-test-apt.log)"
  missing && skip "Slurm's commands are still missing after the install"
fi
command -v python3 >/dev/null || skip "python3 is needed to read the JSON reports"

bin="${CUDOCTOR_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/cudoctor}"
[ -x "$bin" ] || cargo build --quiet -p cudoctor
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

work="$(mktemp -d /tmp/cudoctor-slurm-test.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  set +e
  if [ -f "$work/slurm.conf" ]; then
    SLURM_CONF="$work/slurm.conf" timeout 10 scancel --quiet --full "$(SLURM_CONF="$work/slurm.conf" timeout 10 squeue -h -o %i | tr '\n' ' ')" 2>/dev/null
  fi
  for f in "$work"/slurmd-*.pid "$work"/slurmctld.pid "$work"/munged.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 1
  for f in "$work"/slurmd-*.pid "$work"/slurmctld.pid "$work"/munged.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Ports of this cluster alone, so it cannot meet another one on the host.
base=$(( 20000 + ($$ % 2000) * 10 ))
host="$(hostname -s)"

# A private munge: own key, socket and pid file.
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge.key"
timeout 10 munged --force --key-file="$work/munge.key" --socket="$work/munge.sock" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge.seed" ||
  fail "munged did not start"

cat >"$work/slurm.conf" <<CONF
ClusterName=cudoctorci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool-%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd-%n.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=node1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=1
NodeName=node2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=1
NodeName=node3 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 3)) CPUs=1
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
mkdir -p "$work/state"
export SLURM_CONF="$work/slurm.conf"
echo "slurm-test: $bin; $(srun --version)" >&2
timeout 20 slurmctld || fail "slurmctld did not start"
for n in 1 2 3; do
  timeout 20 slurmd -N "node$n" || echo "slurm-test: slurmd -N node$n did not start" >&2
done

# Up to 30 s for the nodes to register.
idle=0
for _ in $(seq 60); do
  idle="$(timeout 5 sinfo -h -t idle -o %D 2>/dev/null | awk '{s += $1} END {print s + 0}')"
  [ "$idle" -ge 3 ] && break
  sleep 0.5
done
if [ "$idle" -ge 3 ]; then
  nodes=3
  echo "slurm-test: multiple-slurmd mode: 3 nodes (node1..node3) on $host"
elif [ "$idle" -ge 1 ]; then
  nodes=1
  echo "slurm-test: NOTE: multiple-slurmd mode is not available in this Slurm build; testing with one node"
else
  fail "no Slurm node became idle in 30 s"
fi

cat >"$work/fail-node2.sh" <<'SH'
#!/bin/sh
[ "$SLURMD_NODENAME" = node2 ] && exit 3
exit 0
SH
cat >"$work/hang-node3.sh" <<'SH'
#!/bin/sh
[ "$SLURMD_NODENAME" = node3 ] && sleep 300
exit 0
SH
chmod 755 "$work"/*.sh

field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# 1. Every node reports.
status=0
timeout 120 "$bin" fleet collect --timeout 60 --slurm -N "$nodes" >"$work/all.txt" 2>"$work/all.err" || status=$?
cat "$work/all.txt"
[ "$status" -le 1 ] || fail "fleet collect exited $status: $(cat "$work/all.err")"
grep -q "^cudoctor fleet: $nodes node.* reported, 0 failed" "$work/all.txt" || fail "not every node reported"

if [ "$nodes" = 3 ]; then
  # 2. node2's task fails: reported, the others kept, exit 1 (problems), not 2.
  status=0
  timeout 120 "$bin" fleet collect --format json --out "$work/out" --timeout 60 \
    --slurm -N 3 --task-prolog="$work/fail-node2.sh" >"$work/fail.json" 2>"$work/fail.err" || status=$?
  [ "$status" = 1 ] || fail "a failing node should give exit 1, got $status: $(cat "$work/fail.err")"
  [ "$(field "$work/fail.json" 'r["reported"]')" = 2 ] || fail "two nodes should have reported"
  [ "$(field "$work/fail.json" '[(f["node"], f["kind"]) for f in r["failed"]]')" = "[('node2', 'failed')]" ] ||
    fail "node2 should be reported as failed: $(cat "$work/fail.json")"
  field "$work/fail.json" 'r["failed"][0]["detail"]' | grep -q "exit code 3" || fail "the failure should name srun's exit code"
  for n in node1 node3; do
    [ -s "$work/out/$n.json" ] || fail "--out has no $n.json"
    "$bin" check --snapshot "$work/out/$n.json" --format json >/dev/null || [ $? = 1 ] || fail "$n.json is no snapshot"
  done
  [ ! -e "$work/out/node2.json" ] || fail "node2 has a snapshot"
  echo "slurm-test: a failing node is reported: $(field "$work/fail.json" 'r["failed"][0]')"

  # 3. node3 hangs past the time limit: timed out, node1 and node2 kept.
  status=0
  timeout 60 "$bin" fleet collect --format json --timeout 10 \
    --slurm -N 3 --task-prolog="$work/hang-node3.sh" >"$work/hang.json" 2>"$work/hang.err" || status=$?
  [ "$status" = 1 ] || fail "a hanging node should give exit 1, got $status: $(cat "$work/hang.err")"
  [ "$(field "$work/hang.json" 'r["reported"]')" = 2 ] || fail "two nodes should have reported before the limit"
  [ "$(field "$work/hang.json" '[(f["node"], f["kind"]) for f in r["failed"]]')" = "[('node3', 'timed_out')]" ] ||
    fail "node3 should be reported as timed out: $(cat "$work/hang.json")"
  echo "slurm-test: a hanging node is reported: $(field "$work/hang.json" 'r["failed"][0]')"
  timeout 10 scancel --quiet --full --name=cudoctor-fleet || true
fi

# 4. The sbatch equivalent: frames and srun's error lines in the job's output file, read back
#    with --from-log (with 3 nodes, node2's task fails here too).
prolog=""
expect="$nodes node.* reported, 0 failed"
if [ "$nodes" = 3 ]; then
  prolog="--task-prolog=$work/fail-node2.sh"
  expect="2 nodes reported, 1 failed"
fi
cat >"$work/fleet.sbatch" <<SH
#!/bin/sh
#SBATCH --nodes=$nodes
#SBATCH --ntasks-per-node=1
#SBATCH --time=5
#SBATCH --output=$work/sbatch-%j.out
srun $prolog "$bin" fleet node
SH
timeout 120 sbatch --wait --chdir="$work" "$work/fleet.sbatch" >"$work/sbatch.txt" 2>&1 || [ -n "$prolog" ] ||
  fail "sbatch failed: $(cat "$work/sbatch.txt")"
out="$(ls "$work"/sbatch-*.out)"
status=0
"$bin" fleet collect --from-log "$out" >"$work/log.txt" || status=$?
cat "$work/log.txt"
[ "$status" -le 1 ] || fail "fleet collect --from-log exited $status"
grep -q "^cudoctor fleet: $expect" "$work/log.txt" || fail "the sbatch log did not give the expected nodes: $(cat "$out")"
[ -z "$prolog" ] || grep -q "node2  failed" "$work/log.txt" || fail "the sbatch log did not report node2"
echo "slurm-test: ok ($nodes node(s))"
