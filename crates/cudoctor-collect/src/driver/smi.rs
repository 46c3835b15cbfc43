//! Parsers for `nvidia-smi` output. The tool's output is not a stable API, so every parser
//! tolerates missing columns, `[N/A]`, and garbage, returning what it could read.

use cudoctor_snapshot::{Gpu, GpuProcess};

/// The fields asked of `--query-gpu`, in order. `compute_cap` needs a driver from 2021 or later;
/// the caller retries with [`GPU_QUERY_OLD`] when it is refused.
pub const GPU_QUERY: &str =
    "index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,persistence_mode,mig.mode.current,compute_cap";
pub const GPU_QUERY_OLD: &str =
    "index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,persistence_mode,mig.mode.current";
pub const APPS_QUERY: &str = "gpu_uuid,pid,process_name,used_memory";

/// Parsed `--query-gpu=<GPU_QUERY> --format=csv,noheader,nounits`.
pub fn parse_gpu_query(text: &str) -> (Vec<Gpu>, Option<String>) {
    let mut gpus = Vec::new();
    let mut driver = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() < 2 {
            continue;
        }
        let Ok(index) = cols[0].parse::<u32>() else {
            continue;
        };
        let col = |i: usize| cols.get(i).copied().and_then(value);
        if driver.is_none() {
            driver = col(4).map(str::to_string);
        }
        gpus.push(Gpu {
            index,
            name: cols[1].to_string(),
            uuid: col(2).map(str::to_string),
            bus_id: col(3).map(str::to_string),
            memory_total_mib: col(5).and_then(mib),
            memory_used_mib: col(6).and_then(mib),
            persistence_enabled: col(7).and_then(enabled),
            mig_enabled: col(8).and_then(enabled),
            compute_capability: col(9).map(str::to_string),
            source: "nvidia-smi --query-gpu".to_string(),
            what_if: false,
            health: None,
        });
    }
    (gpus, driver)
}

/// Parsed `--query-compute-apps=<APPS_QUERY> --format=csv,noheader,nounits`.
pub fn parse_apps_query(text: &str) -> Vec<GpuProcess> {
    text.lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            let pid = cols.get(1)?.parse().ok()?;
            Some(GpuProcess {
                gpu_uuid: cols.first().copied().and_then(value).map(str::to_string),
                gpu_index: None,
                pid,
                name: cols.get(2).copied().and_then(value).map(str::to_string),
                used_mib: cols.get(3).copied().and_then(value).and_then(mib),
            })
        })
        .collect()
}

/// `CUDA Version: 13.0` and `Driver Version: 580.159.04` from the plain banner.
pub fn parse_banner(text: &str) -> (Option<String>, Option<String>) {
    let after = |key: &str| -> Option<String> {
        let at = text.find(key)? + key.len();
        let tok = text[at..].split_whitespace().next()?;
        let tok = tok.trim_matches('|');
        (!tok.is_empty() && tok.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .then(|| tok.to_string())
    };
    (after("Driver Version:"), after("CUDA Version:"))
}

/// A mode column: `Enabled` / `Disabled` (anything else tells nothing).
fn enabled(col: &str) -> Option<bool> {
    match col {
        "Enabled" => Some(true),
        "Disabled" => Some(false),
        _ => None,
    }
}

/// nvidia-smi's words when the kernel module and the user-space libraries differ
/// ("Failed to initialize NVML: Driver/library version mismatch").
pub fn reports_version_mismatch(stdout_and_err: &str) -> bool {
    stdout_and_err.contains("Driver/library version mismatch")
}

/// The query a driver refused (old drivers lack `compute_cap`).
pub fn refuses_field(stdout_and_err: &str) -> bool {
    stdout_and_err.contains("is not a valid field to query")
}

fn value(s: &str) -> Option<&str> {
    let s = s.trim();
    let unknown = s.is_empty()
        || s.starts_with('[')
        || s.eq_ignore_ascii_case("n/a")
        || s.eq_ignore_ascii_case("not supported");
    (!unknown).then_some(s)
}

fn mib(s: &str) -> Option<u64> {
    s.trim_end_matches("MiB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    use cudoctor_testkit::h200x2;

    #[test]
    fn reads_the_real_banner() {
        let text = h200x2("smi.txt");
        let (driver, cuda) = parse_banner(&text);
        assert_eq!(driver.as_deref(), Some("580.159.04"));
        assert_eq!(cuda.as_deref(), Some("13.0"));
    }

    #[test]
    fn reads_the_real_csv_query_with_header_and_units() {
        // The captured file has a header row and units; the parser skips the header and strips units.
        let text = h200x2("smi_csv.txt");
        // Columns there: index, name, uuid, driver_version, compute_cap, memory.total, pci.bus_id.
        let reordered: String = text
            .lines()
            .skip(1)
            .map(|l| {
                let c: Vec<&str> = l.split(", ").collect();
                format!(
                    "{}, {}, {}, {}, {}, {}, 0, Enabled, Disabled, {}\n",
                    c[0], c[1], c[2], c[6], c[3], c[5], c[4]
                )
            })
            .collect();
        let (gpus, driver) = parse_gpu_query(&reordered);
        assert_eq!(driver.as_deref(), Some("580.159.04"));
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].compute_capability.as_deref(), Some("9.0"));
        assert_eq!(gpus[0].memory_total_mib, Some(143771));
        assert_eq!(gpus[1].bus_id.as_deref(), Some("00000000:00:07.0"));
        assert_eq!(gpus[0].persistence_enabled, Some(true));
        assert_eq!(gpus[0].mig_enabled, Some(false));
    }

    #[test]
    fn tolerates_na_and_garbage() {
        let (gpus, _) = parse_gpu_query(
            "0, Tesla K80, [N/A], 00000000:00:04.0, 470.82.01, 11441, [N/A], Disabled, [N/A]\nnonsense\n\u{0}\u{1}, x\n",
        );
        assert_eq!(gpus.len(), 1);
        assert_eq!(gpus[0].uuid, None);
        assert_eq!(gpus[0].compute_capability, None);
        assert_eq!(gpus[0].memory_total_mib, Some(11441));
        assert_eq!(gpus[0].persistence_enabled, Some(false));
        // A GPU without MIG answers [N/A]: unknown, not "off".
        assert_eq!(gpus[0].mig_enabled, None);
        assert_eq!(parse_banner("garbage"), (None, None));
    }

    #[test]
    fn reads_compute_apps() {
        let apps = parse_apps_query("GPU-ab, 4242, python, 70000\nGPU-cd, x, y, z\n");
        assert_eq!(apps.len(), 1);
        assert_eq!(apps[0].pid, 4242);
        assert_eq!(apps[0].used_mib, Some(70000));
    }
}
