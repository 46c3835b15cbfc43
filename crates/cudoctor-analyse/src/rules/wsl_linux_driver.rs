use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT003",
    name: "wsl-linux-driver",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "Under WSL2, a Linux libcuda shadows the one Windows provides",
    docs: r#"## What it checks
Under WSL2: whether libcuda comes from /usr/lib/wsl/lib (provided by the Windows driver) or a
Linux driver package installed inside the distribution.

## Why it matters
WSL2 must use the Windows host's driver, exposed through /usr/lib/wsl/lib. A Linux NVIDIA driver
(or the `cuda` meta-package, which pulls one in) installed inside WSL puts its own libcuda.so on
the loader path; CUDA then fails with "CUDA driver version is insufficient" or error 100 ("no
CUDA-capable device").

## How to fix
Remove the Linux driver packages inside WSL (keep the toolkit: install `cuda-toolkit-X-Y`, not
`cuda`), and update the driver on Windows instead.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let p = &ctx.snap.platform;
    if !p.wsl {
        return Vec::new();
    }
    let foreign: Vec<&String> = p
        .libcuda_paths
        .iter()
        .filter(|l| !l.starts_with("/usr/lib/wsl/"))
        // A toolkit's link-time stub (`…/lib64/stubs/libcuda.so`) is no driver.
        .filter(|l| !l.split('/').any(|part| part == "stubs"))
        .collect();
    if foreign.is_empty() {
        return Vec::new();
    }
    let mut f = Finding::new(&RULE, "A Linux NVIDIA driver is installed inside WSL2")
        .evidence("WSL2 detected (kernel release or /usr/lib/wsl/lib)")
        .cause("Inside WSL2 the driver comes from Windows through /usr/lib/wsl/lib; a Linux libcuda from a driver package takes its place on the loader path and cannot reach the GPU.")
        .shell("sudo apt-get remove --purge 'nvidia-driver-*' 'libnvidia-compute-*'   # keep only the toolkit (cuda-toolkit-X-Y)")
        .prose("Update the NVIDIA driver on Windows instead");
    for l in foreign {
        f = f.evidence(format!("Linux libcuda: {l}"));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_linux_libcuda_inside_wsl() {
        let mut s = machine(None, &[]);
        s.platform.wsl = true;
        s.platform.libcuda_paths = vec!["/usr/lib/wsl/lib/libcuda.so.1".into()];
        assert!(run(&RULE, &s).is_empty());
        s.platform
            .libcuda_paths
            .push("/usr/lib/x86_64-linux-gnu/libcuda.so.1".into());
        assert_eq!(run(&RULE, &s).len(), 1);
    }
}
