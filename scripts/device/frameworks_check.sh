#!/usr/bin/env bash
# Frameworks beyond torch on the GPU machine (its env has torch cu130, jax cuda13, cupy cuda13):
# what `cudoctor check` (and `check --deep`, `libs`, a `--gpu` what-if) records for each
# framework build, beside what each framework itself says when imported there, each in a process
# of its own: its CUDA runtime (build and loaded), the devices it sees, a tiny computation, and
# the CUDA libraries /proc/self/maps shows after it. No network is needed.
# Usage: OUT=DIR scripts/device/frameworks_check.sh [PATH/TO/cudoctor [PYTHON]]
#   cudoctor: default .whl/cudoctor, else target/release/cudoctor. Output: $OUT/frameworks.tar.gz.
set -uo pipefail
bin=${1:-}
if [ -z "$bin" ]; then
  for b in .whl/cudoctor target/release/cudoctor; do [ -x "$b" ] && { bin=$b; break; }; done
fi
bin=$(readlink -f "${bin:?no cudoctor binary: name one}")
py=${2:-}
if [ -z "$py" ]; then
  py=$(command -v python3)
  [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
fi
out=${OUT:?OUT must name a directory}; mkdir -p "$out"
res=$(mktemp -d /tmp/cudoctor-frameworks.XXXXXX)
{ date -u; "$bin" --version; echo "python $py"; nvidia-smi -L; } >"$res/info.txt" 2>&1

# cudoctor's view.
/usr/bin/time -f "%e s" "$bin" check --python "$py" --format json >"$res/check.json" 2>"$res/check.stderr"; echo "exit $?" >>"$res/check.stderr"
"$bin" check --python "$py" >"$res/check.txt" 2>&1
timeout 300 "$bin" check --deep --python "$py" --format json >"$res/check-deep.json" 2>"$res/check-deep.stderr"; echo "exit $?" >>"$res/check-deep.stderr"
timeout 300 "$bin" check --deep --python "$py" >"$res/check-deep.txt" 2>&1
"$bin" libs --python "$py" >"$res/libs.txt" 2>&1
"$bin" libs --python "$py" --format json >"$res/libs.json" 2>&1
# What-if GPUs for the frameworks' kernel images: a V100 (CUDA 13 builds have no sm_70), a B200.
for g in V100 B200; do
  "$bin" check --python "$py" --gpu "$g" --format json >"$res/check-gpu-$g.json" 2>&1
done

# Each framework in a process of its own: what it says, and what the process maps after it.
for fw in torch jax cupy onnxruntime; do
  timeout 300 "$py" - "$fw" >"$res/said-$fw.json" 2>"$res/said-$fw.stderr" <<'PY'
import importlib, json, sys
fw = sys.argv[1]
said = {'framework': fw}
def cuda_maps():
    seen = []
    for l in open('/proc/self/maps'):
        f = l.split()
        if len(f) >= 6 and '.so' in f[-1] and f[-1] not in seen:
            seen.append(f[-1])
    return seen
try:
    if fw == 'torch':
        import torch
        said.update(version=torch.__version__, cuda=torch.version.cuda,
                    devices=torch.cuda.device_count(),
                    arch_list=torch.cuda.get_arch_list() if torch.cuda.is_available() else None,
                    sum=float(torch.arange(10.0, device='cuda').sum()) if torch.cuda.is_available() else None)
    elif fw == 'jax':
        said['maps_after_import'] = None
        import jax, jax.numpy as jnp
        said['maps_after_import'] = cuda_maps()
        said.update(version=jax.__version__, devices=[str(x) for x in jax.devices()],
                    sum=float(jnp.arange(10.0).sum()))
        for m in ('jax_cuda13_plugin', 'jax_cuda12_plugin'):
            try:
                v = importlib.import_module(m + '._versions')
                said[m] = {'runtime': v.cuda_runtime_get_version(), 'build': v.cuda_runtime_build_version(),
                           'driver': v.cuda_driver_get_version(), 'cudnn': v.cudnn_get_version(),
                           'cc': v.cuda_compute_capability(0)}
            except Exception as e:
                said[m] = {'error': repr(e)}
    elif fw == 'cupy':
        import cupy
        said.update(version=cupy.__version__, runtime=cupy.cuda.runtime.runtimeGetVersion(),
                    driver=cupy.cuda.runtime.driverGetVersion(),
                    devices=cupy.cuda.runtime.getDeviceCount(), sum=float(cupy.arange(10.0).sum()))
        # CuPy's own loading of each CUDA library module (FW023's ground truth).
        modules = {}
        for m in ('cublas', 'curand', 'cusolver', 'cusparse', 'cufft', 'nvrtc'):
            try:
                getattr(cupy.cuda, m)
                modules[m] = 'ok'
            except Exception as e:
                modules[m] = repr(e)[:200]
        said['modules'] = modules
    elif fw == 'onnxruntime':
        import onnxruntime as ort
        said.update(version=ort.__version__, providers=ort.get_available_providers(),
                    device=ort.get_device())
except Exception as e:
    said['error'] = repr(e)
said['maps'] = cuda_maps()
print(json.dumps(said, indent=1))
PY
done

# The comparison: cudoctor's framework builds (CUDA major.minor, where read) beside each
# framework's own word, and the findings of the framework and kernel layers.
python3 - "$res" >"$res/summary.txt" 2>&1 <<'PY'
import json, os, sys
res = sys.argv[1]
def load(n):
    try:
        return json.load(open(os.path.join(res, n)))
    except Exception as e:
        return {'error': repr(e)}
check = load('check.json')
for env in check.get('snapshot', {}).get('python_envs', []):
    print('env', env['prefix'])
    for b in env.get('frameworks', []):
        c = b.get('cuda') or {}
        print('  recorded %-12s %-10s %-22s cuda %s.%s (%s)' % (b['framework'], b['version'], b['package'],
              c.get('major'), c.get('minor', 'x'), c.get('source')))
for f in check.get('findings', []):
    if f['code'] in ('FW020', 'FW021', 'FW022', 'FW023'):
        print('finding', f['code'], f['severity'], f['title'])
        for e in f.get('evidence', []):
            print('   ', e)
for fw in ('torch', 'jax', 'cupy', 'onnxruntime'):
    s = load('said-%s.json' % fw)
    brief = {k: v for k, v in s.items() if k not in ('maps', 'maps_after_import')}
    cuda = [m for m in s.get('maps', []) if '/nvidia/' in m or 'libcuda.so' in m]
    print('said', json.dumps(brief))
    print('  CUDA libraries mapped:', len(cuda))
    for m in cuda:
        print('    ', m)
# JAX: cudoctor's predicted process (libs --format json) beside the maps after its computation.
import os.path
libs = load('libs.json')
said = load('said-jax.json')
cuda_names = ('libcu', 'libnv', 'libnccl', 'libcudnn', 'libcusparse', 'libcufft', 'libcurand')
def is_cuda(p):
    return os.path.basename(p).startswith(cuda_names)
mapped = {os.path.realpath(m) for m in said.get('maps', []) if is_cuda(m) and '/nvidia/' in m}
for fw in libs.get('frameworks', []):
    if not fw['framework'].startswith('JAX'):
        continue
    pred = {os.path.realpath(o.get('real_path') or o['path']) for o in fw['objects'] if is_cuda(o['path'])}
    print('JAX predicted vs mapped (nvidia wheels):', fw['framework'])
    print('  mapped, not predicted:', sorted(mapped - pred))
    print('  predicted, not mapped:', sorted(pred - mapped))
# check --deep's framework probes (ACC011) beside each framework's own word above.
deep = load('check-deep.json')
for p in deep.get('snapshot', {}).get('deep', {}).get('frameworks', []):
    r = p.get('result') or {}
    s = load('said-%s.json' % {'onnx_runtime': 'onnxruntime'}.get(p['framework'], p['framework']))
    print('probe %-12s ending %-10s platform %-5s devices %s computation %s %s ms; said devices %s' % (
        p['framework'], p['ending'].get('kind'), r.get('platform'), r.get('devices'),
        r.get('computation_ok'), r.get('computation_ms'), s.get('devices', s.get('providers'))))
    for m in r.get('messages', []):
        print('    logged:', m[:300])
for f in deep.get('findings', []):
    if f['code'] == 'ACC011':
        print('finding ACC011', f['severity'], f['title'], 'caused_by', f.get('caused_by'))
for name in ('check.json', 'check-deep.json', 'check-gpu-V100.json', 'check-gpu-B200.json'):
    d = load(name)
    print('findings of', name)
    for f in d.get('findings', []):
        if f.get('layer') in ('framework', 'kernels') or f['code'].startswith(('FW', 'KRN', 'DEEP', 'LIB006')):
            print('  ', f['code'], f['severity'], f['title'])
PY
tar -czf "$out/frameworks.tar.gz" -C "$res" .
rm -rf "$res"
echo "done: $out/frameworks.tar.gz"
