use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT031",
    name: "small-dev-shm",
    layer: Layer::Platform,
    severity: Severity::Warning,
    summary: "A container's /dev/shm is too small for torch's DataLoader workers and NCCL",
    docs: r#"## What it checks
Inside a container with torch installed: the size of `/dev/shm` as its mount says
(`/proc/self/mounts`, `size=`). 64 MiB (Docker's and Podman's default without `--ipc=host` or
`--shm-size`) or less is a finding.

## Why it matters
torch's DataLoader workers (`num_workers > 0`) hand every batch to the main process through
shared memory, and NCCL uses it between the GPUs of one node. 64 MiB runs out at the first
large batch: "DataLoader worker (pid N) is killed by signal: Bus error", "unable to write to
file </torch_...>: No space left on device", or NCCL's "unhandled system error".

## How to fix
Start the container with `--ipc=host`, or `--shm-size=16g` (Docker, Podman). On Kubernetes,
mount an `emptyDir` volume with `medium: Memory` at `/dev/shm`.
"#,
    check,
};

/// Docker's and Podman's default size of a container's /dev/shm.
const CONTAINER_DEFAULT_MIB: u64 = 64;

fn check(ctx: &Context) -> Vec<Finding> {
    let s = ctx.snap;
    let (Some(container), Some(shm)) = (&s.platform.container, &s.host.dev_shm) else {
        return Vec::new();
    };
    let Some(mib) = shm.size_mib.filter(|&m| m <= CONTAINER_DEFAULT_MIB) else {
        return Vec::new();
    };
    let Some((env, torch)) = s
        .python_envs
        .iter()
        .find_map(|e| e.torch.as_ref().map(|t| (e, t)))
    else {
        return Vec::new();
    };
    let fix = match container.runtime.as_str() {
        "kubernetes" => "Mount an emptyDir volume with medium: Memory (sizeLimit: 16Gi) at /dev/shm in the pod spec",
        "podman" => "podman run --ipc=host ...   (or --shm-size=16g)",
        _ => "docker run --ipc=host ...   (or --shm-size=16g)",
    };
    vec![Finding::new(
        &RULE,
        format!("/dev/shm is {mib} MiB in this {} container", container.runtime),
    )
    .evidence(format!(
        "/dev/shm: {} with size={mib} MiB (/proc/self/mounts)",
        shm.fs_type
    ))
    .evidence(format!("container: {}", container.evidence.join("; ")))
    .evidence(format!("torch {} in {}", torch.version, env.prefix))
    .cause("torch's DataLoader workers pass every batch through /dev/shm and NCCL uses it between the GPUs of this node: this much runs out (\"DataLoader worker ... is killed by signal: Bus error\", \"No space left on device\", NCCL's \"unhandled system error\").")
    .prose(fix)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{ContainerFacts, DevShm};

    fn docker_with_shm(size_mib: Option<u64>) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.platform.container = Some(ContainerFacts {
            runtime: "docker".into(),
            evidence: vec!["/.dockerenv exists".into()],
            gpu_access: None,
        });
        s.host.dev_shm = Some(DevShm {
            fs_type: "tmpfs".into(),
            size_mib,
        });
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        s
    }

    #[test]
    fn dockers_default_64_mib_with_torch_is_a_finding() {
        let f = run(&RULE, &docker_with_shm(Some(64)));
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("64 MiB"), "{}", f[0].title);
        assert!(f[0].fix[0].contains("--ipc=host"));
    }

    #[test]
    fn a_large_or_unlimited_shm_or_no_container_or_no_torch_is_fine() {
        assert!(run(&RULE, &docker_with_shm(Some(16384))).is_empty());
        assert!(run(&RULE, &docker_with_shm(None)).is_empty());
        let mut bare = docker_with_shm(Some(64));
        bare.platform.container = None;
        assert!(run(&RULE, &bare).is_empty());
        let mut no_torch = docker_with_shm(Some(64));
        no_torch.python_envs.clear();
        assert!(run(&RULE, &no_torch).is_empty());
    }
}
