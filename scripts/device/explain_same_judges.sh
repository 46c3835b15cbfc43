#!/usr/bin/env bash
# `explain` confirms a real message with the findings `check` makes on the same machine, and its
# fix is check's (issue 11, point 3). On the GPU machine: a real "no GPU visible" error produced
# with CUDA_VISIBLE_DEVICES="" is explained with the variable as the program had it (MGPU003 must
# confirm, with check's fix) and as the machine has it (the judges must refute); the same is
# done from a snapshot saved by check. Results and a verdict line per step go to $OUT/same_judges/.
#
# Usage: OUT=/some/dir PYTHON=/opt/torch/.venv/bin/python bash scripts/device/explain_same_judges.sh
set -u
OUT="${OUT:?set OUT}"
PY="${PYTHON:-python3}"
BIN="${CUDOCTOR:-target/release/cudoctor}"
DIR="$OUT/same_judges"
mkdir -p "$DIR"

CUDA_VISIBLE_DEVICES="" timeout 120 "$PY" -c 'import torch; torch.zeros(1).cuda()' > "$DIR/no_visible_gpu.log" 2>&1

CUDA_VISIBLE_DEVICES="" timeout 300 "$BIN" check --format json --python "$PY" --save "$DIR/hidden.snapshot.json" > "$DIR/check_hidden.json" 2> "$DIR/check_hidden.err"
CUDA_VISIBLE_DEVICES="" timeout 300 "$BIN" explain --format json --python "$PY" "$DIR/no_visible_gpu.log" > "$DIR/explain_hidden.json" 2> "$DIR/explain_hidden.err"
timeout 300 "$BIN" explain --format json --snapshot "$DIR/hidden.snapshot.json" "$DIR/no_visible_gpu.log" > "$DIR/explain_snapshot.json" 2> "$DIR/explain_snapshot.err"
timeout 300 "$BIN" explain --format json --python "$PY" "$DIR/no_visible_gpu.log" > "$DIR/explain_visible.json" 2> "$DIR/explain_visible.err"

"$PY" - "$DIR" > "$DIR/verdicts.txt" 2>&1 <<'PYEOF'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
def load(name):
    try:
        return json.loads((d / name).read_text())
    except Exception as e:
        print(f"FAIL {name}: not JSON ({e})")
        return None
check = load("check_hidden.json")
def fix_of(ids):
    steps = []
    for f in check["findings"]:
        if f.get("id") in ids:
            root = f.get("caused_by_id")
            src = next((r for r in check["findings"] if r.get("id") == root), f) if root else f
            for s in src["fix"]:
                if s not in steps:
                    steps.append(s)
    return steps
for name, want in [("explain_hidden.json", "consistent"), ("explain_snapshot.json", "consistent"), ("explain_visible.json", "contradicts")]:
    e = load(name)
    if e is None or check is None:
        continue
    m = e.get("machine") or {}
    ids = [f["id"] for f in m.get("findings", [])]
    ok = m.get("verdict") == want
    same = want != "consistent" or (m.get("fixes") == fix_of(ids) and bool(ids))
    print(("PASS" if ok and same else "FAIL"), name, "category", e.get("category"), "verdict", m.get("verdict"), "want", want, "findings", ids, "fix equals check's" if same else "fix DIFFERS from check's")
PYEOF
cat "$DIR/verdicts.txt"
