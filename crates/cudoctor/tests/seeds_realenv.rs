//! Wheel integrity on real environments made with uv from real wheels (cached by uv under the
//! user cache): an intact nvidia wheel gets no finding, a corrupted, truncated or deleted library
//! gets FW010 naming the package; two wheels installing the same path get FW011, checked
//! against an oracle that is not cudoctor (Python's own hashlib and csv over the RECORDs).
//!
//! Without uv, or when a wheel cannot be had, a test prints SKIPPED; with
//! CUDOCTOR_REQUIRE_REAL_ENVS=1 it fails instead.

use std::path::{Path, PathBuf};
use std::process::Command;

fn skip(why: &str) {
    cudoctor_testkit::skip_missing_input(why, "CUDOCTOR_REQUIRE_REAL_ENVS");
}

/// A fresh venv with `batches` installed one `uv pip install` after another (so the later
/// batch's files win shared paths). Files are copied, never linked: the tests edit them and
/// uv's cache must stay intact. `offline_only` for wheels too big to download in CI.
fn uv_env(batches: &[&[&str]], offline_only: bool) -> Result<(tempfile::TempDir, PathBuf), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let venv = dir.path().join("venv");
    let ok = |c: &mut Command| c.output().map(|o| o.status.success()).unwrap_or(false);
    if !ok(Command::new("uv").arg("venv").arg("-q").arg(&venv)) {
        return Err("uv venv failed (is uv on PATH?)".into());
    }
    let python = venv.join("bin/python");
    for pkgs in batches {
        let install = |offline: bool| {
            let mut c = Command::new("uv");
            c.args(["pip", "install", "-q", "--link-mode", "copy", "--python"])
                .arg(&python)
                .args(*pkgs);
            if offline {
                c.arg("--offline");
            }
            ok(&mut c)
        };
        if !install(true) && (offline_only || !install(false)) {
            return Err(format!("could not install {pkgs:?}"));
        }
    }
    Ok((dir, python))
}

fn check(python: &Path) -> serde_json::Value {
    check_with(python, &[])
}

fn check_with(python: &Path, extra: &[&str]) -> serde_json::Value {
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json"])
        .args(extra)
        .arg("--python")
        .arg(python)
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn findings<'a>(v: &'a serde_json::Value, code: &str) -> Vec<&'a serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

fn site_packages(python: &Path) -> PathBuf {
    let lib = python.parent().unwrap().parent().unwrap().join("lib");
    let py = std::fs::read_dir(&lib)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("lib/python3.*");
    py.path().join("site-packages")
}

#[test]
fn a_damaged_nvidia_wheel_is_named_and_an_intact_one_is_not() {
    let (_dir, python) = match uv_env(&[&["nvidia-cuda-runtime==13.2.86"]], false) {
        Ok(x) => x,
        Err(e) => return skip(&e),
    };
    let v = check(&python);
    assert!(
        findings(&v, "FW010").is_empty(),
        "intact: {:#?}",
        findings(&v, "FW010")
    );
    let lib = site_packages(&python).join("nvidia/cu13/lib/libcudart.so.13");
    let original = std::fs::read(&lib).expect("libcudart.so.13 from the wheel");

    // One byte changed, size kept: only the hash can tell. The default check reads no
    // file's content (its cost must not grow with the libraries' size) and says so; the full
    // check finds it.
    let mut bytes = original.clone();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&lib, &bytes).unwrap();
    let v = check(&python);
    assert!(
        findings(&v, "FW010").is_empty(),
        "{:#?}",
        findings(&v, "FW010")
    );
    let v = check_with(&python, &["--verify-wheels"]);
    let f = findings(&v, "FW010");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("nvidia-cuda-runtime 13.2.86"));
    assert!(f[0]["evidence"][0]
        .as_str()
        .unwrap()
        .ends_with("libcudart.so.13: same size, SHA-256 differs from RECORD"));
    // A uv-made venv has no pip: the fix is spelt for uv, an exact reinstall of the one wheel.
    let fix = f[0]["fix"][0]["shell"].as_str().unwrap();
    assert!(fix.starts_with("uv pip install --python "), "{fix}");
    assert!(
        fix.contains(" --reinstall --no-deps nvidia-cuda-runtime==13.2.86 "),
        "{fix}"
    );

    // Truncated, then deleted.
    std::fs::write(&lib, &original[..original.len() / 3]).unwrap();
    let v = check(&python);
    assert!(findings(&v, "FW010")[0]["evidence"][0]
        .as_str()
        .unwrap()
        .contains(&format!("RECORD says {}", original.len())));
    std::fs::remove_file(&lib).unwrap();
    let v = check(&python);
    assert!(findings(&v, "FW010")[0]["evidence"][0]
        .as_str()
        .unwrap()
        .ends_with("libcudart.so.13: missing (RECORD lists it)"));

    // The reinstall the fix names (spelt for uv: this venv has no pip) repairs it.
    let status = Command::new("uv")
        .args([
            "pip",
            "install",
            "-q",
            "--link-mode",
            "copy",
            "--offline",
            "--force-reinstall",
            "--no-deps",
            "--python",
        ])
        .arg(&python)
        .arg("nvidia-cuda-runtime==13.2.86")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(findings(&check(&python), "FW010").is_empty());
}

#[test]
fn a_cuda12_wheel_overwriting_a_cuda13_wheels_files_is_found() {
    // The NCCL wheels are large: only from uv's cache, never downloaded by the test.
    let (_dir, python) = match uv_env(
        &[&["nvidia-nccl-cu13==2.30.7"], &["nvidia-nccl-cu12==2.26.2"]],
        true,
    ) {
        Ok(x) => x,
        Err(e) => return skip(&format!("{e} (the NCCL wheels are not in uv's cache)")),
    };
    // The oracle: which RECORD's sha256 each shared file has, by Python's hashlib and csv.
    let sp = site_packages(&python);
    let oracle = Command::new(&python)
        .arg("-c")
        .arg(
            "import csv,glob,hashlib,base64,os,sys\n\
             sp=sys.argv[1]; owners={}\n\
             for r in glob.glob(sp+'/*.dist-info/RECORD'):\n\
             \x20 pkg=os.path.basename(os.path.dirname(r)).split('-')[0]\n\
             \x20 for row in csv.reader(open(r)):\n\
             \x20   if row[1]: owners.setdefault(row[0],[]).append((pkg,row[1][7:]))\n\
             for p,o in sorted(owners.items()):\n\
             \x20 if len(o)<2: continue\n\
             \x20 d=base64.urlsafe_b64encode(hashlib.sha256(open(os.path.join(sp,p),'rb').read()).digest()).rstrip(b'=').decode()\n\
             \x20 print(p, ' '.join(k for k,h in o if h==d))\n",
        )
        .arg(&sp)
        .output()
        .expect("python oracle");
    let oracle = String::from_utf8_lossy(&oracle.stdout).to_string();
    assert!(
        oracle.contains("nvidia/nccl/lib/libnccl.so.2 nvidia_nccl_cu12"),
        "{oracle}"
    );

    let v = check(&python);
    let f = findings(&v, "FW011");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("nvidia-nccl-cu12 2.26.2 overwrote"));
    let shared = v["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["wheel_check"].is_object()
                && Path::new(e["prefix"].as_str().unwrap())
                    == python.parent().unwrap().parent().unwrap()
        })
        .expect("the env")["wheel_check"]["shared_paths"]
        .as_array()
        .unwrap()
        .clone();
    for line in oracle.lines() {
        let (path, winner) = line.split_once(' ').unwrap();
        let entry = shared
            .iter()
            .find(|s| s["path"].as_str().unwrap().ends_with(path))
            .unwrap_or_else(|| panic!("{path} not reported as shared"));
        let won: Vec<String> = entry["owners"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["matches"] == true)
            .map(|o| o["package"].as_str().unwrap().replace('-', "_"))
            .collect();
        assert_eq!(won, vec![winner.to_string()], "{path}");
    }
    assert!(
        findings(&v, "FW010").is_empty(),
        "an overwrite is not damage"
    );
}
