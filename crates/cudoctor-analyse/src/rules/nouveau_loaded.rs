use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "GPU005",
    name: "nouveau-loaded",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The nouveau kernel module is loaded",
    docs: r#"## What it checks
Whether /proc/modules lists `nouveau`, the open-source driver DCGM keeps on its denylist
(DCGM_FR_DENYLISTED_DRIVER).

## Why it matters
nouveau and NVIDIA's driver cannot both drive a GPU: a GPU nouveau took is invisible to
CUDA, and the NVIDIA module may refuse to load ("NVRM: ... nouveau is loaded").

## How to fix
Blacklist nouveau and rebuild the initramfs, then reboot:
`printf 'blacklist nouveau\noptions nouveau modeset=0\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf`
then `sudo update-initramfs -u` (Debian, Ubuntu) or `sudo dracut --force` (RHEL, Fedora).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.health.as_ref().and_then(|h| h.nouveau_loaded) != Some(true) {
        return Vec::new();
    }
    let mut f = Finding::new(&RULE, "The nouveau module is loaded")
        .evidence("/proc/modules lists nouveau (DCGM failure reason DCGM_FR_DENYLISTED_DRIVER)")
        .cause("nouveau, the open-source driver, holds or competes for the GPU: CUDA needs NVIDIA's kernel module to drive it.")
        .shell("printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf")
        .prose("rebuild the initramfs ('sudo update-initramfs -u' on Debian and Ubuntu, 'sudo dracut --force' on RHEL and Fedora) and reboot");
    if !ctx.snap.driver.gpus.is_empty() {
        f = f.severity(Severity::Warning).evidence(format!(
            "the NVIDIA driver lists {} GPU(s) meanwhile",
            ctx.snap.driver.gpus.len()
        ));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn nouveau_is_reported_and_its_absence_is_not() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = machine(None, &[]);
        s.health = Some(cudoctor_snapshot::HealthFacts {
            nouveau_loaded: Some(true),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].evidence[0].contains("DCGM_FR_DENYLISTED_DRIVER"));
    }
}
