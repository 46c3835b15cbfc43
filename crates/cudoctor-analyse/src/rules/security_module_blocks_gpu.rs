use cudoctor_snapshot::{DenialSource, SecurityFacts, SecurityModule};

use super::deep_support::probes;
use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT010",
    name: "security-module-blocks-gpu",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "SELinux or AppArmor denies access to the GPU's device files or driver",
    docs: r#"## What it checks
The Linux security modules: SELinux's mode (`/sys/fs/selinux/enforce`), AppArmor's loaded
profiles (`/sys/kernel/security/apparmor/profiles`), the inspecting process's own label
(`/proc/self/attr/apparmor/current`, `/proc/self/attr/current`: what a program started from the
same shell inherits), and denials in the kernel log (`/dev/kmsg`, read without waiting, else
the systemd journal's kernel records of this boot, else `dmesg`) and in auditd's log (where
denials go instead while auditd runs: `/var/log/audit/audit.log` or auditd.conf's `log_file`,
its newest 8 MiB; root's only on most systems, which is said) that name NVIDIA's files: `/dev/nvidia*`, `/dev/char/195:*`, `/proc/driver/nvidia`,
`libnvidia-*`, `libcuda*`, or a process called `nvidia-*`. Under `--root` only a plain-file
`dev/kmsg` inside the root is read.

An error when the log shows enforced denials of such files. Without readable denials, a warning
(marked unsure) only when the GPU is expected but not usable and the process runs confined
(an enforcing SELinux domain other than `unconfined_t`/`spc_t`, or an AppArmor profile in
enforce mode).

## Why it matters
A denied `open` of `/dev/nvidiactl` or `/dev/nvidia0` looks like a missing driver from inside the
program: `torch.cuda.is_available()` is False, `nvidia-smi` fails, and nothing in the CUDA stack
is wrong. Enterprise hosts (SELinux enforcing) and containers (`container_t`, `docker-default`)
are where this happens.

## How to fix
Confirm first, changing nothing: `getenforce`, `sudo ausearch -m avc -ts recent | grep -i nvidia`
(SELinux), `sudo aa-status` and `sudo dmesg | grep 'apparmor="DENIED"' | grep -i nvidia`
(AppArmor). Then allow the access the supported way: for containers on SELinux hosts
`sudo setsebool -P container_use_devices on` (container-selinux), or relabel after a driver
install with `sudo restorecon -Rv /dev/nvidia*`; for AppArmor, the profile's abstraction or
`--security-opt apparmor=unconfined` for a test run. `sudo setenforce 0` is a temporary test
only, reverted by `sudo setenforce 1`.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(sec) = ctx.snap.platform.security.as_ref() else {
        return Vec::new();
    };
    let enforced: Vec<_> = sec.denials.iter().filter(|d| !d.permissive).collect();
    if !enforced.is_empty() {
        let mut f = Finding::new(
            &RULE,
            format!(
                "{} denied access to NVIDIA files ({} denial{} in {})",
                modules_named(enforced.iter().map(|d| d.module)),
                enforced.len(),
                if enforced.len() == 1 { "" } else { "s" },
                logs_named(enforced.iter().map(|d| d.source))
            ),
        );
        for d in enforced.iter().rev().take(5) {
            let by = d
                .subject
                .as_deref()
                .map(|s| format!(" under {s}"))
                .unwrap_or_default();
            let who = d
                .process
                .as_deref()
                .map(|p| format!(" for {p}"))
                .unwrap_or_default();
            f = f.evidence(format!(
                "{}: {} of {} denied{who}{by}",
                module_name(d.module),
                if d.access.is_empty() {
                    "access"
                } else {
                    &d.access
                },
                d.object
            ));
        }
        f = f.evidence(log_source(sec)).evidence(modes(ctx, sec)).cause(
            "The security module refuses the process access to the driver's device files or libraries, so CUDA sees no usable GPU although the driver is fine.",
        );
        return vec![with_fixes(f, sec, enforced.iter().map(|d| d.module))];
    }
    let confined = confinement_that_restricts(sec);
    let Some(confined) = confined else {
        return Vec::new();
    };
    let gpu_unusable = ctx.expects_gpu() && ctx.snap.driver.gpus.is_empty()
        || probes(ctx)
            .iter()
            .any(|p| p.result.cuda.as_ref().is_some_and(|c| !c.available));
    if !gpu_unusable {
        return Vec::new();
    }
    let f = Finding::new(
        &RULE,
        "The GPU is not usable and this process runs confined by a security module",
    )
    .severity(Severity::Warning)
    .confidence(Confidence::Unsure)
    .evidence(confined.1.clone())
    .evidence(modes(ctx, sec))
    .evidence(log_source(sec))
    .cause("A confined process may be denied /dev/nvidia*; no denial could be read to confirm it, so this is a lead to check, not a diagnosis.");
    vec![with_fixes(f, sec, std::iter::once(confined.0))]
}

/// The module whose label confines this process, and a sentence saying so.
fn confinement_that_restricts(sec: &SecurityFacts) -> Option<(SecurityModule, String)> {
    let c = sec.confinement.as_ref()?;
    if c.is_unconfined() {
        return None;
    }
    if let Some(profile) = c.apparmor_enforced_profile() {
        return Some((
            SecurityModule::Apparmor,
            format!(
                "AppArmor profile {profile} in enforce mode ({}: {})",
                c.source, c.label
            ),
        ));
    }
    let t = c.selinux_type()?;
    sec.selinux.as_ref().filter(|s| s.enforcing)?;
    Some((
        SecurityModule::Selinux,
        format!("SELinux domain {t}, enforcing ({}: {})", c.source, c.label),
    ))
}

fn module_name(m: SecurityModule) -> &'static str {
    match m {
        SecurityModule::Selinux => "SELinux",
        SecurityModule::Apparmor => "AppArmor",
    }
}

fn modules_named(ms: impl Iterator<Item = SecurityModule>) -> String {
    let mut names: Vec<&str> = ms.map(module_name).collect();
    names.sort();
    names.dedup();
    names.join(" and ")
}

fn modes(ctx: &Context, sec: &SecurityFacts) -> String {
    let mut parts = Vec::new();
    match &sec.selinux {
        Some(s) => parts.push(format!(
            "SELinux {} ({})",
            if s.enforcing {
                "enforcing"
            } else {
                "permissive"
            },
            s.source
        )),
        None => parts.push("SELinux not mounted".into()),
    }
    match &sec.apparmor {
        Some(a) if a.profiles_readable => parts.push(format!(
            "AppArmor: {} profiles in enforce mode, {} in complain mode ({})",
            a.enforce, a.complain, a.source
        )),
        Some(a) => parts.push(format!("AppArmor enabled ({} not readable)", a.source)),
        None => parts.push("AppArmor not enabled".into()),
    }
    if let Some(c) = &sec.confinement {
        parts.push(format!("this process: {} ({})", c.label, c.source));
    }
    if ctx.snap.platform.container.is_some() {
        parts.push("inside a container".into());
    }
    parts.join("; ")
}

fn log_source(sec: &SecurityFacts) -> String {
    let kernel = match &sec.kernel_log {
        Some(a) => format!("kernel log: {a}"),
        None => "kernel log: not read".into(),
    };
    match &sec.audit_log {
        Some(a) => format!("{kernel}; audit log: {a}"),
        None => kernel,
    }
}

/// "the kernel log", "auditd's log" or both.
fn logs_named(sources: impl Iterator<Item = DenialSource>) -> &'static str {
    let (mut kernel, mut audit) = (false, false);
    for s in sources {
        match s {
            DenialSource::KernelLog => kernel = true,
            DenialSource::AuditLog => audit = true,
        }
    }
    match (kernel, audit) {
        (true, true) => "the kernel log and auditd's log",
        (false, true) => "auditd's log",
        _ => "the kernel log",
    }
}

fn with_fixes(
    mut f: Finding,
    sec: &SecurityFacts,
    modules: impl Iterator<Item = SecurityModule>,
) -> Finding {
    let mut ms: Vec<SecurityModule> = modules.collect();
    ms.dedup();
    if ms.contains(&SecurityModule::Selinux) {
        f = f
            .shell("getenforce   # confirm the mode")
            .shell("sudo ausearch -m avc -ts recent | grep -i nvidia   # confirm the denials")
            .shell("sudo setsebool -P container_use_devices on   # containers on an SELinux host: let container_t use devices")
            .shell("sudo restorecon -Rv /dev/nvidia*   # after a driver install left the device files mislabelled")
            .shell("sudo setenforce 0   # a temporary test only; sudo setenforce 1 reverts it");
    }
    if ms.contains(&SecurityModule::Apparmor) {
        let profile = sec
            .denials
            .iter()
            .filter(|d| d.module == SecurityModule::Apparmor)
            .find_map(|d| d.subject.clone())
            .or_else(|| {
                sec.confinement
                    .as_ref()
                    .and_then(|c| c.apparmor_enforced_profile().map(str::to_string))
            });
        let from_audit = sec
            .denials
            .iter()
            .any(|d| d.module == SecurityModule::Apparmor && d.source == DenialSource::AuditLog);
        f = f
            .shell("sudo aa-status   # confirm which profiles are enforced")
            .shell(if from_audit {
                format!(
                    "sudo grep 'apparmor=\"DENIED\"' {} | grep -i nvidia   # confirm the denials",
                    sec.audit_log
                        .as_ref()
                        .map_or("/var/log/audit/audit.log", |a| a.source.as_str())
                )
            } else {
                "sudo dmesg | grep 'apparmor=\"DENIED\"' | grep -i nvidia   # confirm the denials"
                    .to_string()
            });
        if let Some(p) = profile {
            f = f.shell(format!(
                "sudo aa-complain {}   # a test: log instead of deny for this profile; aa-enforce reverts it",
                cudoctor_plan::quote(&p)
            ));
        }
        f = f.prose("As a test, run the container once with --security-opt apparmor=unconfined (without its profile)");
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, machine, run};
    use cudoctor_snapshot::{Attempt, Confinement, Outcome, SecurityDenial, SelinuxFacts};

    fn selinux_denial() -> SecurityDenial {
        SecurityDenial {
            module: SecurityModule::Selinux,
            object: "/dev/nvidia0".into(),
            process: Some("python".into()),
            subject: Some("system_u:system_r:container_t:s0:c380,c597".into()),
            access: "read write".into(),
            permissive: false,
            line: "avc: denied".into(),
            source: Default::default(),
        }
    }

    fn confined(label: &str, enforcing: bool) -> SecurityFacts {
        SecurityFacts {
            selinux: Some(SelinuxFacts {
                enforcing,
                source: "/sys/fs/selinux/enforce".into(),
            }),
            confinement: Some(Confinement {
                label: label.into(),
                source: "/proc/self/attr/current".into(),
            }),
            kernel_log: Some(Attempt::new(
                "dmesg",
                Outcome::Failed,
                "Operation not permitted",
            )),
            ..Default::default()
        }
    }

    #[test]
    fn enforced_denials_are_an_error_permissive_ones_are_not() {
        let mut s = h200();
        let mut sec = confined("system_u:system_r:container_t:s0:c380,c597", true);
        sec.denials.push(selinux_denial());
        s.platform.security = Some(sec.clone());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].evidence[0].contains("read write of /dev/nvidia0 denied for python"));
        assert!(f[0].fix.iter().any(|x| x.starts_with("sudo ausearch")));
        sec.denials[0].permissive = true;
        s.platform.security = Some(sec);
        assert!(
            run(&RULE, &s).is_empty(),
            "a working GPU and permissive denials"
        );
    }

    #[test]
    fn confinement_alone_only_matters_when_the_gpu_is_unusable() {
        let mut s = h200();
        s.platform.security = Some(confined("system_u:system_r:container_t:s0:c1,c2", true));
        assert!(
            run(&RULE, &s).is_empty(),
            "healthy and confined: no finding"
        );
        let mut s = machine(None, &[]);
        s.platform.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        s.platform.security = Some(confined("system_u:system_r:container_t:s0:c1,c2", true));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].confidence, Confidence::Unsure);
        assert!(f[0].evidence[0].contains("container_t"));
        s.platform.security = Some(confined("system_u:system_r:container_t:s0:c1,c2", false));
        assert!(
            run(&RULE, &s).is_empty(),
            "permissive SELinux denies nothing"
        );
        s.platform.security = Some(confined("unconfined_u:unconfined_r:unconfined_t:s0", true));
        assert!(run(&RULE, &s).is_empty());
        s.platform.security = Some(confined("docker-default (enforce)", false));
        let f = run(&RULE, &s);
        assert!(f[0]
            .fix
            .iter()
            .any(|x| x.contains("aa-complain docker-default")));
    }
}
