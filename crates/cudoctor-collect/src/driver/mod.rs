//! The driver layer: which driver is loaded, the highest CUDA it runs, and its GPUs.
//!
//! Sources, cheapest first, each recorded as an [`Attempt`]: the kernel module's files in /sys
//! and /proc, NVML and libcuda loaded at run time, and `nvidia-smi` run with a timeout. Later
//! sources fill only what earlier ones left unknown, except GPUs, where the richest list wins.
//! A Windows tree under `--root` has one source: the version resources of its driver's DLLs.

mod dynamic;
pub mod probe;
pub mod procfs;
pub mod smi;
pub mod windows_files;

use cudoctor_snapshot::{Attempt, DriverFacts, Gpu, Outcome, Sourced};

use crate::host::{CommandOutcome, Host};
use probe::{Answer, Answers};

const PROC_VERSION: &str = "/proc/driver/nvidia/version";
const SYS_VERSION: &str = "/sys/module/nvidia/version";
const PROC_GPUS: &str = "/proc/driver/nvidia/gpus";

pub fn collect(host: &Host) -> DriverFacts {
    collect_asking(host, false).0
}

/// [`collect`], and the GPU topology from the same NVML session (the multi-GPU layer's facts).
pub fn collect_with_topology(host: &Host) -> (DriverFacts, cudoctor_snapshot::MultiGpuFacts) {
    collect_asking(host, true)
}

fn collect_asking(
    host: &Host,
    with_topology: bool,
) -> (DriverFacts, cudoctor_snapshot::MultiGpuFacts) {
    let mut facts = DriverFacts::default();
    if host.is_windows() && !host.is_live_windows() {
        // A Windows tree: nothing of it is loaded, and Linux's module files are not this
        // machine's; the driver's version is in its DLLs' version resources.
        windows_files::read(host, &mut facts);
        return (facts, crate::multigpu::topology_facts(host, None));
    }
    // Asked first, on a thread: the driver's libraries take the longest (NVML's initialisation),
    // and /sys and /proc are read meanwhile.
    let mut answers = Answers::default();
    std::thread::scope(|s| {
        let asking = host
            .dynamic_loading
            .then(|| s.spawn(|| probe::ask(host, with_topology)));
        if !host.is_windows() {
            // Linux's kernel module files; Windows has none.
            read_sysfs(host, &mut facts);
            read_procfs(host, &mut facts);
        }
        if let Some(asking) = asking {
            answers = asking.join().unwrap_or_default();
        }
    });
    let topology = std::mem::take(&mut answers.topology);
    let multigpu = crate::multigpu::topology_facts(host, with_topology.then_some(topology));
    (collect_rest(host, facts, answers), multigpu)
}

fn collect_rest(host: &Host, mut facts: DriverFacts, answers: Answers) -> DriverFacts {
    if host.dynamic_loading {
        let nvml_hung = answers.nvml_timed_out();
        facts.libraries_failed = answers.failed;
        read_nvml(answers.nvml, &mut facts);
        read_libcuda(answers.libcuda, &mut facts);
        if nvml_hung {
            // nvidia-smi asks the same NVML, and would hang as long again.
            facts.attempts.push(Attempt::new(
                "nvidia-smi",
                Outcome::Skipped,
                "not run: it asks NVML, which did not answer",
            ));
            return facts;
        }
    } else {
        let why = "dynamic loading is off under --root";
        facts
            .attempts
            .push(Attempt::new("nvml", Outcome::Skipped, why));
        facts
            .attempts
            .push(Attempt::new("libcuda", Outcome::Skipped, why));
    }
    let needs_smi = facts.version.is_none()
        || facts.max_cuda.is_none()
        || facts.gpus.iter().any(|g| g.compute_capability.is_none());
    if !host.runs_programs() {
        // Under --root, the user-space driver's version is in its libraries' file names.
        read_user_space_file_names(host, &mut facts);
    }
    if needs_smi {
        read_nvidia_smi(host, &mut facts);
    } else {
        facts.attempts.push(Attempt::new(
            "nvidia-smi",
            Outcome::Skipped,
            "earlier sources gave every fact",
        ));
    }
    facts
}

fn set_version(facts: &mut DriverFacts, version: String, source: &str) {
    if facts.version.is_none() {
        facts.version = Some(Sourced::new(version, source));
    }
}

fn set_module_version(facts: &mut DriverFacts, version: &str, source: &str) {
    if facts.module_version.is_none() {
        facts.module_version = Some(Sourced::new(version.to_string(), source));
    }
}

fn set_library_mismatch(facts: &mut DriverFacts, words: &str, source: &str) {
    if facts.library_mismatch.is_none() {
        facts.library_mismatch = Some(Sourced::new(words.to_string(), source));
    }
}

fn set_max_cuda(facts: &mut DriverFacts, cuda: String, source: &str) {
    if facts.max_cuda.is_none() {
        facts.max_cuda = Some(Sourced::new(cuda, source));
    }
}

fn read_sysfs(host: &Host, facts: &mut DriverFacts) {
    match host.read_text(SYS_VERSION) {
        Ok(text) => {
            let v = text.trim().to_string();
            if procfs::looks_like_driver_version(&v) {
                facts
                    .attempts
                    .push(Attempt::new(SYS_VERSION, Outcome::Ok, &v));
                set_module_version(facts, &v, SYS_VERSION);
                set_version(facts, v, SYS_VERSION);
            } else {
                facts.attempts.push(Attempt::new(
                    SYS_VERSION,
                    Outcome::Failed,
                    format!("unexpected content {:?}", truncate(&v, 60)),
                ));
            }
        }
        Err(e) => facts
            .attempts
            .push(Attempt::new(SYS_VERSION, Outcome::Absent, e.to_string())),
    }
}

fn read_procfs(host: &Host, facts: &mut DriverFacts) {
    match host.read_text(PROC_VERSION) {
        Ok(text) => {
            facts.kernel_module = procfs::kernel_module(&text);
            match procfs::driver_version_from_banner(&text) {
                Some(v) => {
                    facts
                        .attempts
                        .push(Attempt::new(PROC_VERSION, Outcome::Ok, &v));
                    set_module_version(facts, &v, PROC_VERSION);
                    set_version(facts, v, PROC_VERSION);
                }
                None => facts.attempts.push(Attempt::new(
                    PROC_VERSION,
                    Outcome::Failed,
                    "no NVRM version line",
                )),
            }
        }
        Err(e) => facts
            .attempts
            .push(Attempt::new(PROC_VERSION, Outcome::Absent, e.to_string())),
    }
    let buses = host.list_dir(PROC_GPUS);
    let gpus: Vec<Gpu> = buses
        .iter()
        .enumerate()
        .filter_map(|(i, bus)| {
            let text = host
                .read_text(&format!("{PROC_GPUS}/{bus}/information"))
                .ok()?;
            procfs::gpu_from_information(&text, i as u32)
        })
        .collect();
    if !buses.is_empty() {
        facts.attempts.push(Attempt::new(
            PROC_GPUS,
            if gpus.is_empty() {
                Outcome::Failed
            } else {
                Outcome::Ok
            },
            format!("{} GPU(s)", gpus.len()),
        ));
    }
    let mut gpus = gpus;
    gpus.sort_by_key(|g| g.index);
    facts.gpus = gpus;
}

/// `libnvidia-ml.so.580.159.04` (or `libcuda.so.…`) in the driver's library directories: the
/// version of the user-space driver, the one programs load, told by a file name.
fn read_user_space_file_names(host: &Host, facts: &mut DriverFacts) {
    let found = crate::platform::DRIVER_LIB_DIRS.iter().find_map(|dir| {
        ["libnvidia-ml.so.", "libcuda.so."].iter().find_map(|stem| {
            host.list_dir(dir).into_iter().find_map(|name| {
                let v = name.strip_prefix(stem)?;
                procfs::looks_like_driver_version(v)
                    .then(|| (format!("{dir}/{name}"), v.to_string()))
            })
        })
    });
    let Some((path, version)) = found else {
        return;
    };
    facts
        .attempts
        .push(Attempt::new(path.clone(), Outcome::Ok, &version));
    // As nvidia-smi's answer would: the user-space view is the one programs get (DRV003 compares).
    facts.version = Some(Sourced::new(version, path));
}

fn read_nvml(answer: Answer<dynamic::NvmlFacts, crate::nvml::NvmlError>, facts: &mut DriverFacts) {
    match answer {
        Answer::Got(Ok(n)) => {
            let detail = format!(
                "driver {}, {} GPU(s){}",
                n.driver_version.as_deref().unwrap_or("?"),
                n.gpus.len(),
                if n.notes.is_empty() {
                    String::new()
                } else {
                    format!("; {}", n.notes.join("; "))
                }
            );
            facts
                .attempts
                .push(Attempt::new("nvml", Outcome::Ok, detail));
            if let Some(v) = n.driver_version {
                // NVML speaks for the loaded driver more exactly than the module banner.
                facts.version = Some(Sourced::new(v, "nvml"));
            }
            if let Some(c) = n.max_cuda_int {
                set_max_cuda(facts, cuda_from_int(c), "nvml");
            }
            if !n.gpus.is_empty() {
                facts.gpus = n.gpus;
                facts.processes = n.processes;
            }
        }
        Answer::Got(Err(e)) => {
            facts.nvml_init_error = e.code;
            if e.code == Some(crate::nvml::ERROR_LIB_RM_VERSION_MISMATCH) {
                set_library_mismatch(
                    facts,
                    &format!("{} (NVML_ERROR_LIB_RM_VERSION_MISMATCH)", e.message),
                    "nvml",
                );
            }
            facts.attempts.push(Attempt::new(
                "nvml",
                outcome_of_load_error(&e.message),
                e.message,
            ))
        }
        Answer::Missing { outcome, why } => facts.attempts.push(Attempt::new("nvml", outcome, why)),
    }
}

fn read_libcuda(answer: Answer<i32, String>, facts: &mut DriverFacts) {
    match answer {
        Answer::Got(Ok(v)) => {
            let cuda = cuda_from_int(v);
            facts.attempts.push(Attempt::new(
                "libcuda",
                Outcome::Ok,
                format!("cuDriverGetVersion = {v} ({cuda})"),
            ));
            // libcuda is the authority on what it can run: it replaces NVML's copy of the same fact.
            facts.max_cuda = Some(Sourced::new(cuda, "libcuda cuDriverGetVersion"));
        }
        Answer::Got(Err(e)) => {
            facts
                .attempts
                .push(Attempt::new("libcuda", outcome_of_load_error(&e), e))
        }
        Answer::Missing { outcome, why } => {
            facts.attempts.push(Attempt::new("libcuda", outcome, why))
        }
    }
}

/// Absent when the loader found no such library, else failed.
pub(crate) fn outcome_of_load_error(e: &str) -> Outcome {
    if e.contains("cannot open shared object") || e.contains("No such file") {
        Outcome::Absent
    } else {
        Outcome::Failed
    }
}

/// 13000 -> "13.0", 12040 -> "12.4".
pub fn cuda_from_int(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn read_nvidia_smi(host: &Host, facts: &mut DriverFacts) {
    let Some(smi) = host.which("nvidia-smi") else {
        facts.attempts.push(Attempt::new(
            "nvidia-smi",
            Outcome::Absent,
            "not found on PATH",
        ));
        return;
    };
    if !host.runs_programs() {
        facts.attempts.push(Attempt::new(
            smi,
            Outcome::NotRunUnderRoot,
            "driver facts come from the root's /proc and /sys files only",
        ));
        return;
    }
    let query = |fields: &str| {
        host.run(
            &smi,
            &[
                &format!("--query-gpu={fields}"),
                "--format=csv,noheader,nounits",
            ],
        )
    };
    let mut out = query(smi::GPU_QUERY);
    if let CommandOutcome::Exited { stdout, stderr, .. } = &out {
        if smi::refuses_field(&format!("{stdout}{stderr}")) {
            out = query(smi::GPU_QUERY_OLD);
        }
    }
    match out {
        CommandOutcome::Exited {
            status: Some(0),
            stdout,
            ..
        } => {
            let (gpus, driver) = smi::parse_gpu_query(&stdout);
            facts.attempts.push(Attempt::new(
                format!("{smi} --query-gpu"),
                if gpus.is_empty() {
                    Outcome::Failed
                } else {
                    Outcome::Ok
                },
                format!("{} GPU(s)", gpus.len()),
            ));
            if let Some(d) = driver {
                // nvidia-smi speaks for the user-space driver; when it differs from the kernel
                // module's banner, the user-space view is the one programs get (DRV003 compares).
                if facts.version.as_ref().is_none_or(|v| v.source != "nvml") {
                    facts.version = Some(Sourced::new(d, "nvidia-smi"));
                }
            }
            merge_gpus(facts, gpus);
        }
        other => {
            record_command_failure(facts, &format!("{smi} --query-gpu"), other);
            return;
        }
    }
    if facts.max_cuda.is_none() {
        match host.run(&smi, &[]) {
            CommandOutcome::Exited { stdout, .. } => {
                let (driver, cuda) = smi::parse_banner(&stdout);
                if let Some(d) = driver {
                    set_version(facts, d, "nvidia-smi");
                }
                match cuda {
                    Some(c) => {
                        facts.attempts.push(Attempt::new(
                            smi.clone(),
                            Outcome::Ok,
                            format!("CUDA Version {c}"),
                        ));
                        set_max_cuda(facts, c, "nvidia-smi banner");
                    }
                    None => facts.attempts.push(Attempt::new(
                        smi.clone(),
                        Outcome::Failed,
                        "no CUDA Version in the banner",
                    )),
                }
            }
            other => record_command_failure(facts, &smi, other),
        }
    }
    if facts.processes.is_empty() {
        if let CommandOutcome::Exited {
            status: Some(0),
            stdout,
            ..
        } = host.run(
            &smi,
            &[
                &format!("--query-compute-apps={}", smi::APPS_QUERY),
                "--format=csv,noheader,nounits",
            ],
        ) {
            facts.processes = smi::parse_apps_query(&stdout);
        }
    }
}

/// Keeps the GPU list with the most facts: nvidia-smi knows compute capability, procfs does not.
fn merge_gpus(facts: &mut DriverFacts, from_smi: Vec<Gpu>) {
    if from_smi.is_empty() {
        return;
    }
    if facts.gpus.is_empty() || facts.gpus.iter().all(|g| g.source != "nvml") {
        facts.gpus = from_smi;
        return;
    }
    for gpu in &mut facts.gpus {
        if gpu.compute_capability.is_none() {
            if let Some(s) = from_smi.iter().find(|s| s.uuid == gpu.uuid) {
                gpu.compute_capability = s.compute_capability.clone();
            }
        }
    }
}

fn record_command_failure(facts: &mut DriverFacts, what: &str, outcome: CommandOutcome) {
    let (o, detail) = match outcome {
        CommandOutcome::Exited {
            status,
            stdout,
            stderr,
        } => {
            let said = format!("{stderr}{stdout}");
            let first = truncate(first_line(&said), 200);
            if smi::reports_version_mismatch(&said) {
                set_library_mismatch(facts, first, what);
            }
            (
                Outcome::Failed,
                format!(
                    "exit status {}: {first}",
                    status.map_or("signal".to_string(), |s| s.to_string()),
                ),
            )
        }
        CommandOutcome::NotStarted(e) => (Outcome::Failed, e),
        CommandOutcome::TimedOut(t) => (Outcome::TimedOut, format!("no answer in {t:?}")),
        CommandOutcome::NotRunUnderRoot => (Outcome::NotRunUnderRoot, String::new()),
    };
    facts.attempts.push(Attempt::new(what, o, detail));
}

pub(crate) fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

pub(crate) fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_ints_decode() {
        assert_eq!(cuda_from_int(13000), "13.0");
        assert_eq!(cuda_from_int(12040), "12.4");
        assert_eq!(cuda_from_int(11080), "11.8");
    }
}
