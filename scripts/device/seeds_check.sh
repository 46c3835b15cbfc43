#!/usr/bin/env bash
# The practitioner-article checks on the GPU machine: `cudoctor check --format json` (and with
# --verify-wheels, and --deep with a local MASTER_ADDR), keeping the findings of the new rules
# (PLT010, FW010, FW011, TK010, ACC010, MGPU010-MGPU014) and the facts they read. A healthy
# machine must show none of them above info. Writes to $OUT; changes nothing on the machine.
set -u
OUT=${OUT:-/tmp/seeds-out}
mkdir -p "$OUT"
BIN=${CUDOCTOR:-target/release/cudoctor}
CODES='["PLT010","FW010","FW011","TK010","ACC010","MGPU010","MGPU011","MGPU012","MGPU013","MGPU014"]'
PY=${CUDOCTOR_PYTHON:-}
if [ -z "$PY" ]; then
  for c in "${VIRTUAL_ENV:-}/bin/python" /opt/torch/.venv/bin/python "$(command -v python3)"; do
    if [ -x "$c" ] && "$c" -c 'import torch' 2>/dev/null; then PY=$c; break; fi
  done
fi
echo "cudoctor: $BIN  python: ${PY:-none}" | tee "$OUT/seeds_summary.txt"
args=()
[ -n "$PY" ] && args=(--python "$PY")

run() {  # name, then cudoctor arguments
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  timeout 600 "$BIN" check --format json "$@" > "$OUT/$name.json" 2> "$OUT/$name.stderr"
  local rc=$?
  end=$(date +%s.%N)
  python3 - "$OUT/$name.json" "$name" "$rc" "$start" "$end" "$CODES" <<'PY' | tee -a "$OUT/seeds_summary.txt"
import json, sys
path, name, rc, start, end, codes = sys.argv[1:7]
codes = json.loads(codes)
try:
    v = json.load(open(path))
except Exception as e:
    print(f"{name}: no JSON ({e}), exit {rc}")
    sys.exit(0)
new = [f for f in v["findings"] if f["code"] in codes]
print(f"{name}: exit {rc}, {float(end) - float(start):.2f} s, {len(v['findings'])} findings, {len(new)} of the new rules")
for f in new:
    print(f"  {f['severity']:7} {f['code']}: {f['title']}")
snap = v.get("snapshot", {})
sec = snap.get("platform", {}).get("security")
print("  security:", json.dumps(sec)[:600])
for e in snap.get("python_envs", []):
    w = e.get("wheel_check")
    if w:
        print(f"  wheels {e['prefix']}: {w['files_checked']} files, {w['files_hashed']} hashed, "
              f"{w['bytes_hashed'] >> 20} MiB, {len(w['damaged'])} damaged, {len(w['shared_paths'])} shared")
net = snap.get("multigpu", {}).get("network")
if net:
    print("  interfaces:", [(i["name"], i["operstate"]) for i in net["interfaces"]])
    print("  ib:", json.dumps(net["ib_devices"])[:600], "peermem:", net.get("peermem_loaded"))
r = snap.get("multigpu", {}).get("rendezvous")
if r:
    print("  rendezvous:", json.dumps(r))
PY
}

run check "${args[@]}"
run verify_wheels --verify-wheels "${args[@]}"
if [ -n "$PY" ]; then
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29577 run deep_rendezvous --deep "${args[@]}"
fi
