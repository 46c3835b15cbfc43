use cudoctor_snapshot::LibraryFailure;

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "DRV007",
    name: "driver-libraries-fail",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The driver's own libraries hang or crash when asked",
    docs: r#"## What it checks
Whether the driver's user-space libraries answered cudoctor's questions: NVML (the driver's
version, its GPUs, their topology) and libcuda (`cuDriverGetVersion`). cudoctor asks them in a
child process with a time limit (`--timeout`), so a hang or a crash there is a finding, not a
hung or crashed cudoctor.

## Why it matters
- **A hang**: NVML's initialisation talks to the kernel driver. When it does not return, the
  driver is wedged: a GPU fell off the bus, an Xid error left it unusable, or a process is stuck
  inside the driver. Every CUDA program then hangs in its first CUDA call (`import torch` works,
  `torch.cuda.is_available()` never returns) and so does `nvidia-smi`.
- **A crash**: the library died inside the call (SIGSEGV, SIGBUS; on Windows an unhandled
  exception such as 0xC0000005, an access violation). Every program that loads it
  (torch, nvidia-smi) is likely to crash the same way. The usual cause is a driver install whose
  user-space files are damaged, or from two driver versions (a container whose mounted driver
  libraries come from another driver than the host's kernel module, a partial upgrade).

What the libraries would have said (GPUs, versions) is unknown, so the findings that need it
(DRV001 no driver, DRV002 no GPU) stay silent rather than guess.

## How to fix
A hang: look for Xid errors and "fallen off the bus" in the kernel log, find the processes
holding the GPU, and reboot (or reset the GPU when nothing uses it). A crash: see whether
`nvidia-smi` crashes too; if so, reinstall the driver package that matches the loaded kernel
module (`cat /proc/driver/nvidia/version`); if `nvidia-smi` works, the crash is cudoctor's to
fix: please report it. On Windows: the System log's `nvlddmkm` events for a hang, then a
restart; for a crash, whether `nvidia-smi` crashes too, then a clean reinstall of the driver.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.snap.driver;
    let Some(failed) = &d.libraries_failed else {
        return Vec::new();
    };
    let windows = ctx.snap.host.os == "windows";
    let name = match failed.library.as_str() {
        "libcuda" if windows => "nvcuda.dll",
        "libcuda" => "libcuda",
        _ => "NVML",
    };
    let mut f = Finding::new(&RULE, "").about(crate::Subject::Driver);
    for a in d
        .attempts
        .iter()
        .filter(|a| a.source == "nvml" || a.source == "libcuda")
    {
        f = f.evidence(a.to_string());
    }
    if let Some(module) = &d.module_version {
        f = f.evidence(format!(
            "kernel module {} (from {})",
            module.value, module.source
        ));
    }
    let f = match failed.how {
        LibraryFailure::Hung { after_s } => {
            f.title = format!("The NVIDIA driver does not answer: {name} hung for {after_s} s");
            if windows {
                f.cause(format!(
                    "{name} did not return within {after_s} s. It waits on the kernel driver, so the driver is most likely wedged (a GPU that stopped responding, a TDR or Xid error): CUDA programs and nvidia-smi will hang the same way."
                ))
                // nvlddmkm is the NVIDIA display driver's kernel module: its Xid errors and
                // resets are System log events of that provider.
                .powershell("Get-WinEvent -FilterHashtable @{LogName='System'; ProviderName='nvlddmkm'} -MaxEvents 20   # the driver's errors")
                .prose("Then restart the machine; if it recurs, reinstall the driver (a clean installation)")
            } else {
                f.cause(format!(
                    "{name} did not return within {after_s} s. It waits on the kernel driver, so the driver is most likely wedged (a GPU fallen off the bus, an Xid error, a process stuck in the driver): CUDA programs and nvidia-smi will hang the same way."
                ))
                .shell("sudo dmesg | grep -iE 'nvrm|xid|fallen off'   # the driver's errors")
                .shell("sudo fuser -v /dev/nvidia*   # the processes holding the GPUs")
                .prose("Then reboot the machine (or, once no process uses the GPU, reset it: sudo nvidia-smi -r)")
            }
        }
        LibraryFailure::Crashed { signal } => {
            let signal = signal_name(signal);
            f.title =
                format!("The NVIDIA driver's {name} crashed ({signal}) when asked for its facts");
            f.cause(format!(
                "cudoctor's probe process died of {signal} inside {name}. Programs that load it (torch, nvidia-smi) are likely to crash too; most likely the driver's user-space files are damaged or come from another driver version than the loaded kernel module. If nvidia-smi works, the crash is cudoctor's: please report it."
            ))
            .shell("nvidia-smi   # does it crash too?")
            .shell("cat /proc/driver/nvidia/version   # the loaded kernel module's version")
            .prose("If nvidia-smi crashes too, reinstall the driver package of that version (in a container: the host's NVIDIA Container Toolkit mounts the host's libraries; restart the container)")
        }
        LibraryFailure::Exception { code } => {
            let exception = cudoctor_snapshot::windows_exception(code);
            f.title = format!(
                "The NVIDIA driver's {name} crashed ({exception}) when asked for its facts"
            );
            f.cause(format!(
                "cudoctor's probe process ended with {exception} inside {name}. Programs that load it (torch, nvidia-smi) are likely to crash too; most likely the driver's files are damaged or come from two driver versions (a partial update). If nvidia-smi works, the crash is cudoctor's: please report it."
            ))
            .powershell("nvidia-smi   # does it crash too?")
            .prose("If nvidia-smi crashes too, reinstall the NVIDIA driver (the installer's clean installation), then restart")
        }
    };
    vec![f]
}

/// "SIGSEGV", or "signal 64" for a signal without a name.
fn signal_name(signal: i32) -> String {
    match cudoctor_snapshot::signal_name(signal) {
        "signal" => format!("signal {signal}"),
        name => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{Attempt, LibrariesFailed, Outcome};

    fn failing(how: LibraryFailure) -> cudoctor_snapshot::Snapshot {
        let mut s = machine(None, &[]);
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        s.driver.module_version = Some(cudoctor_snapshot::Sourced::new(
            "580.159.04".into(),
            "/proc/driver/nvidia/version",
        ));
        s.driver.version = s.driver.module_version.clone();
        s.driver.attempts = vec![
            Attempt::new("libcuda", Outcome::Ok, "cuDriverGetVersion = 13000 (13.0)"),
            Attempt::new("nvml", Outcome::TimedOut, "no answer in 10s"),
        ];
        s.driver.libraries_failed = Some(LibrariesFailed {
            library: "nvml".into(),
            how,
        });
        s
    }

    #[test]
    fn on_windows_a_crash_names_its_exception_and_the_fixes_are_windows_ones() {
        let mut s = failing(LibraryFailure::Exception { code: 0xC000_0005 });
        s.host.os = "windows".into();
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].title,
            "The NVIDIA driver's NVML crashed (exception 0xC0000005 (access violation)) when asked for its facts"
        );
        let commands: Vec<String> = f[0].fix.iter().map(|s| s.to_string()).collect();
        assert!(
            commands
                .iter()
                .all(|c| !c.contains("/proc") && !c.contains("sudo")),
            "{commands:?}"
        );
        let s = {
            let mut s = failing(LibraryFailure::Hung { after_s: 10.0 });
            s.host.os = "windows".into();
            s
        };
        let f = run(&RULE, &s);
        let commands: Vec<String> = f[0].fix.iter().map(|s| s.to_string()).collect();
        assert!(
            commands.iter().any(|c| c.contains("nvlddmkm")),
            "{commands:?}"
        );
        assert!(
            commands
                .iter()
                .all(|c| !c.contains("dmesg") && !c.contains("/dev/nvidia")),
            "{commands:?}"
        );
    }

    #[test]
    fn a_hung_nvml_is_a_wedged_driver() {
        let f = run(&RULE, &failing(LibraryFailure::Hung { after_s: 10.0 }));
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].title,
            "The NVIDIA driver does not answer: NVML hung for 10 s"
        );
        assert!(f[0].evidence.iter().any(|e| e.contains("no answer in 10s")));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("kernel module 580.159.04")));
    }

    #[test]
    fn a_crash_names_its_signal_and_doubts_itself() {
        let f = run(&RULE, &failing(LibraryFailure::Crashed { signal: 11 }));
        assert!(f[0].title.contains("crashed (SIGSEGV)"), "{}", f[0].title);
        assert!(f[0].cause.contains("please report it"));
    }

    #[test]
    fn silent_when_the_libraries_answered() {
        assert!(run(&RULE, &h200()).is_empty());
        assert!(run(&RULE, &machine(None, &[])).is_empty());
    }
}
