//! A Windows tree's driver, read from its files: NVIDIA's driver DLLs carry the driver version
//! in their file version (VS_FIXEDFILEINFO). Nothing is loaded; the GPUs, which only the
//! driver itself lists (NVML, on the live machine), stay unknown.

use cudoctor_pe::winfs::WinPath;
use cudoctor_pe::FileVersion;
use cudoctor_snapshot::{Attempt, DriverFacts, Outcome, Sourced};

use crate::host::Host;

/// What names the attempt when no DLL of the tree gave the driver's version.
pub const ATTEMPT: &str = "windows driver";

/// The driver's DLLs whose version is read, in order: NVML and the CUDA driver in System32 (where
/// the driver's installer puts them), and NVML where drivers before the DCH packages installed
/// it (`NVSMI`, beside nvidia-smi.exe).
fn driver_dlls(host: &Host) -> Vec<(WinPath, &'static str)> {
    let system32 = crate::windows::windows_dir(host).join("System32");
    let nvsmi = crate::windows::program_files(host)
        .join("NVIDIA Corporation")
        .join("NVSMI");
    vec![
        (system32.clone(), "nvml.dll"),
        (system32, "nvcuda.dll"),
        (nvsmi, "nvml.dll"),
    ]
}

/// The driver version of a Windows tree from the version resources of its driver DLLs: each DLL
/// found is an attempt naming its file version; the first that spells a driver version gives it.
/// Without one the driver stays unknown (a copy of a disk may leave System32 out, a DLL may be
/// damaged), which is not its absence: a skipped attempt says so (DriverFacts::not_read).
pub fn read(host: &Host, facts: &mut DriverFacts) {
    let Some(fs) = crate::windows::windows_fs(host) else {
        return;
    };
    let dlls = driver_dlls(host);
    let mut found = false;
    for (dir, name) in &dlls {
        let Some(path) = fs.file_in(dir, name) else {
            continue;
        };
        found = true;
        let read = crate::windows::version_info(&fs, &path).and_then(|info| {
            let v = info
                .and_then(|i| i.file_version)
                .ok_or("no file version in its version resource")?;
            let driver = driver_version(v)
                .ok_or_else(|| format!("file version {v} does not spell an NVIDIA driver's"))?;
            Ok((v, driver))
        });
        match read {
            Ok((v, driver)) => {
                facts.attempts.push(Attempt::new(
                    path.to_string(),
                    Outcome::Ok,
                    format!("file version {v}: driver {driver}"),
                ));
                if facts.version.is_none() {
                    facts.version = Some(Sourced::new(driver, path.to_string()));
                }
            }
            Err(why) => facts
                .attempts
                .push(Attempt::new(path.to_string(), Outcome::Failed, why)),
        }
    }
    if facts.version.is_none() {
        let looked: Vec<String> = dlls.iter().map(|(d, n)| d.join(n).to_string()).collect();
        let why = if found {
            "no driver DLL of the tree gave a version".to_string()
        } else {
            format!("none of {} is in the tree", looked.join(", "))
        };
        facts.attempts.push(Attempt::new(
            ATTEMPT,
            Outcome::Skipped,
            format!("{why}: the driver is unknown"),
        ));
    }
    // Only the driver lists its GPUs (NVML, on the live machine): no file of the tree does.
    facts.gpus_not_read = true;
}

/// The NVIDIA driver version a driver DLL's file version spells: A.B.C.D holds it in C's last
/// digit and D's four digits, `(C % 10) * 10000 + D` written DDD.DD, so 32.0.15.6094 is 560.94
/// and 31.0.15.3713 is 537.13. ArrayFire reads nvcuda.dll's VS_FIXEDFILEINFO so
/// (arrayfire/arrayfire, src/backend/cuda/driver.cpp, `nvDriverVersion`: `(HIWORD(LS) - 10) *
/// 10000 + LOWORD(LS)`, then `%.2f` of it over 100), and Chromium the same parts of the registry's
/// DriverVersion (chromium/chromium, gpu/config/gpu_info_collector_win.cc,
/// `ParseNVIDIARegistryDriverVersion`: the last five digits of C and D, as DDD.DD, "the actual
/// driver version that NVML also returns"). ArrayFire's `C - 10` is the scheme: C is 10 plus the
/// driver's hundreds (13 for 3xx drivers, 14 for 4xx, 15 for 5xx). `None` for a version not of
/// that shape (cudart64_12.dll's 6.14.11.12090, msvcp140.dll's 14.51.36247.0).
pub fn driver_version(v: FileVersion) -> Option<String> {
    let [_, _, c, d] = v.0;
    if !(11..=19).contains(&c) || d > 9999 {
        return None;
    }
    let n = u32::from(c - 10) * 10000 + u32::from(d);
    Some(format!("{}.{:02}", n / 100, n % 100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_file_versions_spell_driver_versions() {
        // Drivers 560.94 and 537.13 (the examples of the scheme), a 4xx driver's 456.71
        // (27.21.14.5671), a D with a zero in the hundreds (550.05), a 581 driver.
        for (four, driver) in [
            ([32, 0, 15, 6094], "560.94"),
            ([31, 0, 15, 3713], "537.13"),
            ([27, 21, 14, 5671], "456.71"),
            ([31, 0, 15, 5005], "550.05"),
            ([32, 0, 15, 8108], "581.08"),
        ] {
            assert_eq!(
                driver_version(FileVersion(four)).as_deref(),
                Some(driver),
                "{four:?}"
            );
        }
    }

    #[test]
    fn other_file_versions_spell_none() {
        // cudart64_12.dll of nvidia-cuda-runtime-cu12 12.9.79, the Visual C++ runtime's
        // msvcp140.dll, a C of 10 (a driver below 100), D beyond four digits.
        for four in [
            [6, 14, 11, 12090],
            [14, 51, 36247, 0],
            [1, 0, 10, 42],
            [32, 0, 15, 10000],
        ] {
            assert_eq!(driver_version(FileVersion(four)), None, "{four:?}");
        }
    }
}
