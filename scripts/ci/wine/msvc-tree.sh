#!/usr/bin/env bash
# TK019 judged by cudoctor.exe under Wine on a Windows-layout tree (called by windows.sh, or
# alone: scripts/ci/wine/msvc-tree.sh WINE CUDOCTOR_EXE WORKDIR with WINEPREFIX set).
# The tree: a ComfyUI-portable Python whose torch is a CUDA 12.9 build, CUDA 12.9's toolkit
# (CUDA_PATH), and Visual Studio Community 2022 as its installer records it
# (C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\<id>\state.json, the fields vswhere
# reports), first without the C++ workload, then with it (an MSVC toolset's cl.exe and
# vcvarsall.bat). Four runs, each checked from the JSON report:
#   1. Visual Studio without C++: TK019, its installer's `modify ... --add ...NativeDesktop`;
#   2. the C++ tools installed (not on PATH; torch and setuptools run vcvarsall.bat): nothing;
#   3. DISTUTILS_USE_SDK=1 in the same shell: TK019, the installation never set up, the fix
#      unsets the variable;
#   4. DISTUTILS_USE_SDK=1 with the toolset's bin directory on PATH (WINEPATH: a Native Tools
#      prompt): nothing.
set -euo pipefail
wine=$1 exe=$2 work=$3
tk="$work/msvc-tree"
vs='C:\Program Files\Microsoft Visual Studio\2022\Community'
vsdir="$tk/C/Program Files/Microsoft Visual Studio/2022/Community"
bin="$vsdir/VC/Tools/MSVC/14.44.35207/bin/Hostx64/x64"
embeded="$tk/C/ComfyUI_windows_portable/python_embeded"
cuda='C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9'
rm -rf "$tk"
mkdir -p "$embeded/Lib/site-packages/torch" "$tk/C/Windows/System32" "$vsdir/Common7/IDE"
printf "__version__ = '2.15.0+cu129'\ncuda: Optional[str] = '12.9'\n" >"$embeded/Lib/site-packages/torch/version.py"
printf MZ >"$embeded/python.exe"
printf MZ >"$embeded/python312.dll"
printf 'python312.zip\n.\nLib/site-packages\n' >"$embeded/python312._pth"
toolkit="$tk/C/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.9"
mkdir -p "$toolkit/bin"
printf MZ >"$toolkit/bin/nvcc.exe"
printf '{"cuda": {"name": "CUDA SDK", "version": "12.9.86"}}' >"$toolkit/version.json"
instance="$tk/C/ProgramData/Microsoft/VisualStudio/Packages/_Instances/3d1f0b4c"
mkdir -p "$instance"
python3 - "$instance/state.json" "$vs" <<'PY'
import json, sys
json.dump({
    "installationPath": sys.argv[2],
    "installationVersion": "17.14.36310.24",
    "catalogInfo": {"productLineVersion": "2022", "productDisplayVersion": "17.14.9"},
    "product": {"id": "Microsoft.VisualStudio.Product.Community"},
}, open(sys.argv[1], "w"))
PY

# check --root TREE under Wine with CUDA_PATH (and the given variables); its JSON report.
judge() {
  local out="$work/msvc-$1.json"
  shift
  set +e
  env CUDA_PATH="$cuda" "$@" timeout 120 "$wine" "$exe" check --root "$tk" --format json >"$out" 2>"$out.err"
  local rc=$?
  set -e
  case "$rc" in 0|1) ;; *) cat "$out.err" >&2; echo "check --root of the MSVC tree exited with $rc" >&2; exit 1 ;; esac
  echo "$out"
}
expect() {  # expect REPORT none | expect REPORT PYTHON-ASSERTIONS-ON-f
  python3 - "$@" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
tk019 = [f for f in report["findings"] if f["code"] == "TK019"]
if sys.argv[2] == "none":
    assert not tk019, tk019
    sys.exit(0)
assert len(tk019) == 1, [f["code"] for f in report["findings"]]
f = tk019[0]
fixes = [x.get("powershell") or x.get("prose") or "" for x in f["fix"]]
evidence = "\n".join(f["evidence"])
exec(sys.argv[2])
print(f"windows: TK019 under Wine: {f['title']}", file=sys.stderr)
PY
}

# 1. Visual Studio Community without the C++ workload.
r=$(judge no-cpp)
expect "$r" "assert 'no cl.exe on PATH and no Visual Studio with the C++ tools' in f['title'], f['title']
assert 'Visual Studio Community 2022 at C:\\\\Program Files\\\\Microsoft Visual Studio\\\\2022\\\\Community' in evidence, evidence
assert fixes[0].endswith(\"--add Microsoft.VisualStudio.Workload.NativeDesktop --includeRecommended --passive\"), fixes"

# 2. The C++ workload's files.
mkdir -p "$bin" "$vsdir/VC/Auxiliary/Build"
printf MZ >"$bin/cl.exe"
printf '@echo off\r\n' >"$vsdir/VC/Auxiliary/Build/vcvarsall.bat"
printf '@echo off\r\n' >"$vsdir/VC/Auxiliary/Build/vcvars64.bat"
r=$(judge cpp)
expect "$r" none
python3 - "$r" <<'PY'
import json, sys
msvc = json.load(open(sys.argv[1]))["snapshot"]["windows"]["msvc"]
cl = msvc["installations"][0]["cl_x64"][0]
assert cl.endswith(r"VC\Tools\MSVC\14.44.35207\bin\Hostx64\x64\cl.exe"), cl
PY

# 3. DISTUTILS_USE_SDK=1 outside a Native Tools prompt.
r=$(judge sdk DISTUTILS_USE_SDK=1)
expect "$r" "assert 'DISTUTILS_USE_SDK is set but no cl.exe is on PATH' in f['title'], f['title']
assert 'CreateProcess failed: The system cannot find the file specified.' in evidence, evidence
assert fixes[0].startswith('Remove-Item Env:DISTUTILS_USE_SDK'), fixes"

# 4. The same with the toolset on PATH, as the Native Tools prompt has it.
r=$(judge sdk-prompt DISTUTILS_USE_SDK=1 WINEPATH="$vs"'\VC\Tools\MSVC\14.44.35207\bin\Hostx64\x64')
expect "$r" none
