//! Minimal, sourced version knowledge for the cross-check (`data/knowledge.toml`).

use crate::facts::Platform;
use crate::fields::arch_major_minor;
use serde::Deserialize;
use std::sync::OnceLock;

pub const BUILTIN_TOML: &str = include_str!("../data/knowledge.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverFloor {
    pub cuda_major: u32,
    pub linux: String,
    pub windows: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolkitDriver {
    pub cuda: String,
    pub linux: String,
    #[serde(default)]
    pub windows: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorchRelease {
    pub torch: String,
    pub variants: Vec<String>,
    #[serde(default)]
    pub torchvision: Option<String>,
    #[serde(default)]
    pub torchaudio: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantArch {
    pub variant: String,
    pub sass: Vec<String>,
    pub ptx: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knowledge {
    pub schema: u32,
    pub driver_floor: Vec<DriverFloor>,
    pub toolkit_driver: Vec<ToolkitDriver>,
    pub torch_release: Vec<TorchRelease>,
    pub variant_arch: Vec<VariantArch>,
}

/// The built-in knowledge, parsed on first use.
pub fn builtin() -> Result<&'static Knowledge, &'static toml::de::Error> {
    static KB: OnceLock<Result<Knowledge, toml::de::Error>> = OnceLock::new();
    KB.get_or_init(|| toml::from_str(BUILTIN_TOML)).as_ref()
}

/// Numeric components of a version: "580.159.04" -> [580, 159, 4]; "2.11.0+cu130" -> [2, 11, 0].
pub fn version_parts(v: &str) -> Vec<u32> {
    v.split(['+', '-', ' '])
        .next()
        .unwrap_or_default()
        .split('.')
        .map_while(|p| p.parse().ok())
        .collect()
}

/// "12.8" -> (12, 8)
pub fn major_minor(v: &str) -> Option<(u32, u32)> {
    match version_parts(v).as_slice() {
        [major, minor, ..] => Some((*major, *minor)),
        [major] => Some((*major, 0)),
        [] => None,
    }
}

/// "cu128" -> "12.8"
pub fn variant_cuda(variant: &str) -> Option<String> {
    crate::fields::FieldKind::CudaSuffix.normalize(variant)
}

/// "12.8" -> "cu128"
pub fn cuda_variant(cuda: &str) -> Option<String> {
    let (major, minor) = major_minor(cuda)?;
    Some(format!("cu{major}{minor}"))
}

/// Whether a GPU of architecture `gpu` can run a library built with these SASS and PTX
/// targets: SASS of the same major and a minor not above the GPU's, or PTX not above the GPU
/// (JIT-compiled). Jetson/integrated exceptions are not modelled.
pub fn arch_runs(gpu: &str, sass: &[String], ptx: &[String]) -> Option<bool> {
    let (gmaj, gmin) = arch_major_minor(gpu)?;
    let sass_ok = sass
        .iter()
        .filter_map(|s| arch_major_minor(s))
        .any(|(maj, min)| maj == gmaj && min <= gmin);
    let ptx_ok = ptx
        .iter()
        .filter_map(|s| arch_major_minor(s))
        .any(|(maj, min)| (maj, min) <= (gmaj, gmin));
    Some(sass_ok || ptx_ok)
}

fn cmp_versions(a: &str, b: &str) -> std::cmp::Ordering {
    version_parts(a).cmp(&version_parts(b))
}

impl Knowledge {
    /// The oldest driver that runs programs built with CUDA `major`.x (minor-version compatibility).
    pub fn driver_floor(&self, cuda_major: u32, platform: Platform) -> Option<&str> {
        let row = self
            .driver_floor
            .iter()
            .find(|r| r.cuda_major == cuda_major)?;
        Some(if platform == Platform::Windows {
            &row.windows
        } else {
            &row.linux
        })
    }

    /// The driver that shipped with toolkit `cuda` ("12.1").
    pub fn toolkit_driver(&self, cuda: &str, platform: Platform) -> Option<&str> {
        let (maj, min) = major_minor(cuda)?;
        let row = self
            .toolkit_driver
            .iter()
            .find(|r| major_minor(&r.cuda) == Some((maj, min)))?;
        if platform == Platform::Windows {
            row.windows.as_deref()
        } else {
            Some(&row.linux)
        }
    }

    /// Whether `driver` can run programs built with `cuda`. `None` when unknown.
    pub fn driver_runs(&self, driver: &str, cuda: &str, platform: Platform) -> Option<bool> {
        let (major, _) = major_minor(cuda)?;
        let floor = self.driver_floor(major, platform)?;
        if version_parts(driver).is_empty() {
            return None;
        }
        Some(cmp_versions(driver, floor) != std::cmp::Ordering::Less)
    }

    /// The release entry for a torch version ("2.7.1+cu128" -> the "2.7" row).
    pub fn torch_release(&self, torch_version: &str) -> Option<&TorchRelease> {
        let (maj, min) = major_minor(torch_version)?;
        self.torch_release
            .iter()
            .find(|r| major_minor(&r.torch) == Some((maj, min)))
    }

    pub fn variant_arch(&self, variant: &str) -> Option<&VariantArch> {
        self.variant_arch.iter().find(|v| v.variant == variant)
    }

    /// Variants (with known arch lists) whose published builds run on every one of `gpus`,
    /// oldest CUDA first. Restricted to `release`'s variants when given.
    pub fn variants_for_gpus(
        &self,
        gpus: &[String],
        release: Option<&TorchRelease>,
    ) -> Vec<String> {
        let mut out: Vec<String> = self
            .variant_arch
            .iter()
            .filter(|v| release.is_none_or(|r| r.variants.contains(&v.variant)))
            .filter(|v| {
                gpus.iter()
                    .all(|g| arch_runs(g, &v.sass, &v.ptx) == Some(true))
            })
            .map(|v| v.variant.clone())
            .collect();
        out.sort_by(|a, b| {
            let ca = variant_cuda(a).unwrap_or_default();
            let cb = variant_cuda(b).unwrap_or_default();
            cmp_versions(&ca, &cb)
        });
        out
    }

    /// The newest release that offers one of `variants`.
    pub fn newest_release_with(&self, variants: &[String]) -> Option<&TorchRelease> {
        self.torch_release
            .iter()
            .filter(|r| r.variants.iter().any(|v| variants.contains(v)))
            .max_by(|a, b| cmp_versions(&a.torch, &b.torch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kb() -> &'static Knowledge {
        match builtin() {
            Ok(kb) => kb,
            Err(e) => panic!("built-in knowledge does not parse: {e}"),
        }
    }

    #[test]
    fn known_rows() {
        let kb = kb();
        assert_eq!(kb.driver_floor(12, Platform::Linux), Some("525.60.13"));
        assert_eq!(
            kb.toolkit_driver("12.1", Platform::Linux),
            Some("530.30.02")
        );
        assert_eq!(
            kb.driver_runs("470.86", "12.1", Platform::Linux),
            Some(false)
        );
        assert_eq!(
            kb.driver_runs("470.86", "11.8", Platform::Linux),
            Some(true)
        );
        assert_eq!(
            kb.driver_runs("580.159.04", "13.0", Platform::Linux),
            Some(true)
        );
        assert_eq!(
            kb.torch_release("2.7.1+cu128").map(|r| r.variants.clone()),
            Some(vec!["cu118".into(), "cu126".into(), "cu128".into()])
        );
        assert_eq!(variant_cuda("cu128").as_deref(), Some("12.8"));
        assert_eq!(cuda_variant("13.0").as_deref(), Some("cu130"));
    }

    #[test]
    fn arch_rule() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(arch_runs("sm_86", &s(&["sm_80"]), &[]), Some(true));
        assert_eq!(arch_runs("sm_120", &s(&["sm_90"]), &[]), Some(false));
        assert_eq!(
            arch_runs("sm_120", &s(&["sm_90"]), &s(&["sm_90"])),
            Some(true)
        );
        assert_eq!(
            arch_runs("sm_61", &s(&["sm_70", "sm_75"]), &[]),
            Some(false)
        );
    }

    #[test]
    fn blackwell_and_pascal_variants() {
        let kb = kb();
        let blackwell = kb.variants_for_gpus(&["sm_120".to_string()], None);
        assert!(
            blackwell.contains(&"cu128".to_string()) && !blackwell.contains(&"cu126".to_string())
        );
        let pascal = kb.variants_for_gpus(&["sm_61".to_string()], None);
        assert!(pascal.contains(&"cu126".to_string()) && !pascal.contains(&"cu128".to_string()));
    }

    #[test]
    fn every_release_variant_is_well_formed() {
        let kb = kb();
        for r in &kb.torch_release {
            assert!(major_minor(&r.torch).is_some(), "{}", r.torch);
            for v in &r.variants {
                assert!(variant_cuda(v).is_some(), "{v}");
            }
        }
        for row in &kb.toolkit_driver {
            assert!(major_minor(&row.cuda).is_some());
            assert!(version_parts(&row.linux).len() >= 2, "{}", row.linux);
        }
    }
}
