//! The torch table against the PyPI evidence it was built from (data/pypi-facts.json, written by
//! scripts/pypi_facts.py): Python lists, the PyPI default CUDA, and torchvision / torchaudio pins.

use std::collections::BTreeMap;

use cudoctor_kb::{CudaVersion, Kb};
use serde_json::Value;

fn facts() -> Value {
    serde_json::from_str(include_str!("../data/pypi-facts.json")).unwrap()
}

fn list(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// The CUDA runtime a torch wheel's Requires-Dist names, if any.
fn runtime_cuda(requires: &[String]) -> Option<CudaVersion> {
    for r in requires {
        let r = r
            .split(';')
            .next()
            .unwrap_or_default()
            .replace([' ', '(', ')'], "");
        let version = r
            .strip_prefix("nvidia-cuda-runtime-cu12==")
            .or_else(|| r.strip_prefix("nvidia-cuda-runtime-cu11=="))
            .or_else(|| {
                r.split_once("]==")
                    .filter(|(p, _)| p.starts_with("cuda-toolkit["))
                    .map(|(_, v)| v)
            });
        if let Some(v) = version {
            return v.parse().ok();
        }
    }
    None
}

#[test]
fn python_lists_match_the_wheels_pypi_serves() {
    let f = facts();
    let torch: &BTreeMap<String, Value> =
        &serde_json::from_value(f["packages"]["torch"].clone()).unwrap();
    let mut checked = 0;
    for r in Kb::embedded().torch_releases() {
        let Some(row) = torch.get(&r.version) else {
            continue;
        };
        assert_eq!(r.python, list(&row["python"]), "torch {}", r.version);
        if let Some(tv) = &r.torchvision {
            let tvrow = &f["packages"]["torchvision"][tv];
            if !tvrow.is_null() {
                assert_eq!(
                    r.torchvision_python,
                    list(&tvrow["python"]),
                    "torchvision {tv}"
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} releases checked");
}

#[test]
fn pypi_default_matches_the_runtime_torch_requires() {
    let f = facts();
    let mut checked = 0;
    for r in Kb::embedded().torch_releases() {
        let row = &f["packages"]["torch"][&r.version];
        if row.is_null() || row["requires_dist"].is_null() {
            continue;
        }
        let cuda = runtime_cuda(&list(&row["requires_dist"])).expect("a CUDA runtime requirement");
        assert_eq!(
            r.pypi_default.as_deref(),
            Some(cuda.tag().as_str()),
            "torch {}",
            r.version
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} releases checked");
}

#[test]
fn companions_pinned_by_metadata_match() {
    let f = facts();
    for r in Kb::embedded().torch_releases() {
        for (pkg, ver) in [
            ("torchvision", &r.torchvision),
            ("torchaudio", &r.torchaudio),
        ] {
            let Some(ver) = ver else { continue };
            let row = &f["packages"][pkg][ver];
            if row.is_null() || row["requires_dist"].is_null() {
                continue;
            }
            for req in list(&row["requires_dist"]) {
                let req = req.replace([' ', '(', ')'], "");
                if let Some(pinned) = req.strip_prefix("torch==") {
                    assert_eq!(pinned, r.version, "{pkg} {ver} pins torch {pinned}");
                }
                if let Some(min) = req.strip_prefix("torch>=") {
                    let min: cudoctor_kb::TorchVersion = min.parse().unwrap();
                    let have: cudoctor_kb::TorchVersion = r.version.parse().unwrap();
                    assert!(have >= min, "{pkg} {ver} needs torch >= {min:?}");
                }
            }
        }
    }
}

#[test]
fn torchaudio_stopped_after_2_11() {
    let kb = Kb::embedded();
    for r in kb.torch_releases() {
        let v: cudoctor_kb::TorchVersion = r.version.parse().unwrap();
        if v >= "2.12".parse().unwrap() {
            assert!(r.torchaudio.is_none(), "{}", r.version);
            assert!(r.torchaudio_absent.is_some(), "{}", r.version);
        }
    }
    assert_eq!(
        kb.torch("2.15.0").unwrap().pypi_default.as_deref(),
        Some("cu132")
    );
    assert_eq!(
        kb.torch("2.14.0").unwrap().torchvision.as_deref(),
        Some("0.29.0")
    );
    assert!(!kb.torch("2.15.0").unwrap().supports_python("3.10"));
}
