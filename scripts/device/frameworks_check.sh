#!/usr/bin/env bash
# Frameworks beyond torch on the GPU machine (its env has torch cu130, jax cuda13, cupy cuda13):
# what `cudoctor check` records for each framework build, beside what each framework itself
# says when imported there (the CUDA runtime version JAX's plugin and CuPy report, the devices
# they see, torch.version.cuda) and the libraries the process maps after each import.
# Usage: OUT=DIR scripts/device/frameworks_check.sh PATH/TO/cudoctor [PYTHON]
set -uo pipefail
bin=$(readlink -f "${1:?cudoctor binary}"); shift
py=${1:-}
if [ -z "$py" ]; then
  py=$(command -v python3)
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
fi
out=${OUT:?OUT must name a directory}; mkdir -p "$out"
"$bin" check --python "$py" --format json >"$out/check.json" 2>"$out/check.stderr"; echo "exit $?" >>"$out/check.stderr"
"$bin" check --python "$py" >"$out/check.txt" 2>&1
"$bin" libs --python "$py" >"$out/libs.txt" 2>&1
"$py" - >"$out/frameworks_said.json" 2>"$out/frameworks_said.stderr" <<'PY'
import importlib, json
said = {}
def maps():
    return sorted({l.split()[-1] for l in open('/proc/self/maps') if '.so' in l and ('cuda' in l or 'nvidia' in l or 'cublas' in l or 'cudnn' in l)})
try:
    import torch
    said['torch'] = {'version': torch.__version__, 'cuda': torch.version.cuda, 'devices': torch.cuda.device_count()}
except Exception as e:
    said['torch'] = {'error': repr(e)}
try:
    import jax, jax.numpy as jnp
    d = jax.devices()
    said['jax'] = {'version': jax.__version__, 'devices': [str(x) for x in d],
                   'sum': float(jnp.arange(10.0).sum())}
    for m in ('jax_cuda13_plugin', 'jax_cuda12_plugin'):
        try:
            v = importlib.import_module(m + '._versions')
            said['jax'][m] = {'runtime': v.cuda_runtime_get_version(), 'build': v.cuda_runtime_build_version(),
                              'driver': v.cuda_driver_get_version()}
        except Exception as e:
            said['jax'][m] = {'error': repr(e)}
except Exception as e:
    said['jax'] = {'error': repr(e)}
try:
    import cupy
    said['cupy'] = {'version': cupy.__version__, 'runtime': cupy.cuda.runtime.runtimeGetVersion(),
                    'driver': cupy.cuda.runtime.driverGetVersion(), 'devices': cupy.cuda.runtime.getDeviceCount(),
                    'sum': float(cupy.arange(10.0).sum())}
except Exception as e:
    said['cupy'] = {'error': repr(e)}
said['maps_after_all_imports'] = maps()
print(json.dumps(said, indent=1))
PY
# cudoctor's framework list beside it, for the comparison.
python3 - "$out/check.json" >"$out/frameworks_recorded.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({e['prefix']: e.get('frameworks', []) for e in d['snapshot']['python_envs']}, indent=1))
print(json.dumps([(f['code'], f['severity'], f['title']) for f in d['findings'] if f['layer'] == 'framework' or f['code'] in ('DRV004', 'LIB006')], indent=1))
PY
echo "done: $out"
