//! The JSON shape of `cudoctor kernels --format json`:
//! `{"libraries": [{"path", "sass": [...], "ptx": [...], "error"?}], "gpus": [...verdicts...]}`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::compat::{verdict, ComputeCapability, CudaVersion, ImageSet, Verdict};
use crate::error::ScanError;
use crate::scan::FileImages;

/// One library in the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryReport {
    pub path: String,
    pub sass: Vec<String>,
    pub ptx: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lto: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ptx_isa: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl LibraryReport {
    /// The report line of one scan result.
    pub fn new(path: &std::path::Path, result: &Result<FileImages, ScanError>) -> Self {
        let path = cudoctor_types::os_text::from_os(path.as_os_str()).into_owned();
        match result {
            Ok(img) => LibraryReport {
                path,
                sass: img.sass.clone(),
                ptx: img.ptx.clone(),
                lto: img.lto.clone(),
                ptx_isa: img.ptx_isa.clone(),
                error: None,
            },
            Err(e) => LibraryReport {
                path,
                error: Some(e.to_string()),
                ..LibraryReport::default()
            },
        }
    }
}

/// A GPU to judge libraries for: a present one, or a what-if (`--gpu sm_120`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub compute_capability: ComputeCapability,
}

/// The verdict on one library for one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryVerdict {
    pub path: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Verdicts for one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuReport {
    #[serde(flatten)]
    pub gpu: GpuTarget,
    pub libraries: Vec<LibraryVerdict>,
}

/// The whole `kernels` report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelsReport {
    pub libraries: Vec<LibraryReport>,
    pub gpus: Vec<GpuReport>,
    /// The driver's highest CUDA version used for the PTX checks, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_cuda: Option<String>,
    /// Libraries listed above that are judged for no GPU, with why: the environment's import
    /// never loads them (bitsandbytes' builds for other CUDA releases), or their kernels are
    /// not in their fat binaries (cuFFT).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<NotJudged>,
    /// What the report could not look at, said plainly (a Windows environment's DLLs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A library judged for no GPU, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotJudged {
    pub path: String,
    pub why: String,
}

impl KernelsReport {
    /// Marks `path` as judged for no GPU (`why`) and takes it out of every GPU's verdicts.
    pub fn not_judged(&mut self, path: &str, why: String) {
        for g in &mut self.gpus {
            g.libraries.retain(|l| l.path != path);
        }
        self.not_judged.push(NotJudged {
            path: path.to_string(),
            why,
        });
    }
}

/// Builds the report. Libraries without any fat binary (ordinary ELF files) are left out;
/// failed scans are kept with their error. Verdicts cover libraries with kernel images only.
pub fn kernels_report(
    scans: &[(PathBuf, Result<FileImages, ScanError>)],
    gpus: &[GpuTarget],
    driver_cuda: Option<CudaVersion>,
) -> KernelsReport {
    let libraries = scans
        .iter()
        .filter(|(_, r)| r.as_ref().map_or(true, FileImages::has_fatbin))
        .map(|(p, r)| LibraryReport::new(p, r))
        .collect();
    judged(libraries, gpus, driver_cuda)
}

/// The report of `libraries` (read already, each with its images or its error): each GPU's
/// verdict on every library read without error, and the libraries whose kernels are not in
/// their fat binaries judged for no GPU.
pub fn judged(
    libraries: Vec<LibraryReport>,
    gpus: &[GpuTarget],
    driver_cuda: Option<CudaVersion>,
) -> KernelsReport {
    let gpus = gpus
        .iter()
        .map(|g| GpuReport {
            gpu: g.clone(),
            libraries: libraries
                .iter()
                .filter(|l| l.error.is_none())
                .map(|l| LibraryVerdict {
                    path: l.path.clone(),
                    verdict: verdict(
                        &ImageSet::from_names(&l.sass, &l.ptx, &l.ptx_isa),
                        g.compute_capability,
                        driver_cuda,
                    ),
                })
                .collect(),
        })
        .collect();
    let mut report = KernelsReport {
        libraries,
        gpus,
        driver_cuda: driver_cuda.map(|v| v.to_string()),
        not_judged: Vec::new(),
        notes: Vec::new(),
    };
    let outside: Vec<(String, &str)> = report
        .libraries
        .iter()
        .filter_map(|l| {
            Some((
                l.path.clone(),
                crate::outside::kernels_outside_fat_binary(&l.path)?,
            ))
        })
        .collect();
    for (path, why) in outside {
        report.not_judged(&path, why.to_string());
    }
    report
}
