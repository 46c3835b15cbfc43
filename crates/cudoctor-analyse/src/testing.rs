//! Small builders for hand-made snapshots in rule tests.

use cudoctor_kb::Kb;
use cudoctor_snapshot::{
    Gpu, NvccOnPath, Package, PythonEnv, PythonEnvKind, Snapshot, Sourced, Toolkit, TorchBuild,
};

use crate::{Context, Finding, Rule};

pub fn run(rule: &Rule, snap: &Snapshot) -> Vec<Finding> {
    (rule.check)(&Context::new(snap, Kb::embedded()))
}

pub fn machine(driver: Option<(&str, &str)>, gpus: &[(&str, &str)]) -> Snapshot {
    let mut s = Snapshot::new("test", "/");
    if let Some((version, cuda)) = driver {
        s.driver.version = Some(Sourced::new(version.to_string(), "nvml"));
        s.driver.max_cuda = Some(Sourced::new(cuda.to_string(), "libcuda"));
    }
    s.driver.gpus = gpus
        .iter()
        .enumerate()
        .map(|(i, (name, cc))| Gpu {
            index: i as u32,
            name: name.to_string(),
            compute_capability: (!cc.is_empty()).then(|| cc.to_string()),
            memory_total_mib: Some(81920),
            memory_used_mib: Some(0),
            source: "nvml".into(),
            ..Default::default()
        })
        .collect();
    s
}

/// A healthy H200 machine like the real one in the fixtures.
pub fn h200() -> Snapshot {
    let mut s = machine(
        Some(("580.159.04", "13.0")),
        &[("NVIDIA H200", "9.0"), ("NVIDIA H200", "9.0")],
    );
    s.python_envs.push(torch_env(
        "/opt/venv",
        "2.11.0+cu130",
        Some("13.0"),
        &[
            ("torchvision", "0.26.0+cu130"),
            ("torchaudio", "2.11.0+cu130"),
        ],
    ));
    s.toolkit.toolkits.push(Toolkit {
        root: "/usr/local/cuda-13.0".into(),
        version: Some("13.0.88".into()),
        version_source: Some("nvcc --version".into()),
        found_via: vec!["/usr/local/cuda*".into()],
        nvcc: Some("/usr/local/cuda-13.0/bin/nvcc".into()),
        link_dir: None,
        host_compilers: None,
        cccl: None,
    });
    s.toolkit.nvcc_on_path = Some(NvccOnPath {
        path: "/usr/local/cuda/bin/nvcc".into(),
        resolved: "/usr/local/cuda-13.0/bin/nvcc".into(),
        version: Some("13.0.88".into()),
        toolkit_root: Some("/usr/local/cuda-13.0".into()),
    });
    s.env.insert("CUDA_HOME".into(), "/usr/local/cuda".into());
    for (i, g) in s.driver.gpus.iter_mut().enumerate() {
        g.bus_id = Some(format!("00000000:00:0{}.0", 6 + i));
        g.persistence_enabled = Some(true);
        g.mig_enabled = Some(false);
        g.health = Some(healthy_h200_health());
    }
    s.health = Some(cudoctor_snapshot::HealthFacts {
        nouveau_loaded: Some(false),
        kernel_log: cudoctor_snapshot::KernelLog {
            read: cudoctor_snapshot::KernelLogRead::Read {
                source: "/dev/kmsg".into(),
                records: 1200,
                truncated: false,
            },
            ..Default::default()
        },
        dcgm_diag: None,
    });
    s
}

/// One GPU's health as the real idle H200 of the fixtures reports it
/// (tests/fixtures/real/h200x2-torch2.11-cu130/smi_q.txt, field by field): persistence on, ECC
/// on now and pending, no ECC errors, page retirement not supported (it remaps rows), no rows
/// remapped, only the Idle clock event, 0 % busy at P0, PCIe gen 5 of 5 and x16 of x16, inforom
/// valid, no compute process, MIG off.
pub fn healthy_h200_health() -> cudoctor_snapshot::GpuHealth {
    use cudoctor_snapshot::{CurrentPending, EccCounts, GpuHealth, NvmlQuery, PcieLink, RowRemap};
    fn ok<T>(v: T) -> Option<NvmlQuery<T>> {
        Some(NvmlQuery {
            rc: 0,
            value: Some(v),
        })
    }
    let on = CurrentPending {
        current: true,
        pending: true,
    };
    GpuHealth {
        persistence_mode: ok(true),
        ecc_mode: ok(on),
        ecc_volatile: ok(EccCounts::default()),
        ecc_aggregate: ok(EccCounts::default()),
        retired_pages_pending: Some(NvmlQuery { rc: 3, value: None }),
        row_remap: ok(RowRemap::default()),
        clocks_event_reasons: ok(cudoctor_snapshot::health::clocks_event::GPU_IDLE),
        utilization_gpu: ok(0),
        pstate: ok(0),
        pcie: PcieLink {
            current_gen: ok(5),
            max_gen: ok(5),
            current_width: ok(16),
            max_width: ok(16),
        },
        nvlink_errors: Vec::new(),
        inforom_valid: ok(true),
        compute_processes: ok(0),
        mig_mode: ok(CurrentPending::default()),
    }
}

/// The health of GPU `index` of a test snapshot, to change.
pub fn health_of(s: &mut Snapshot, index: usize) -> &mut cudoctor_snapshot::GpuHealth {
    s.driver.gpus[index]
        .health
        .get_or_insert_with(healthy_h200_health)
}

/// A Windows environment with torch as cudoctor-collect reads one: an embedded Python at
/// `prefix` (`C:\ComfyUI_windows_portable\python_embeded`), its packages in
/// `Lib\site-packages`.
pub fn windows_torch_env(
    prefix: &str,
    version: &str,
    cuda: Option<&str>,
    others: &[(&str, &str)],
) -> PythonEnv {
    let sp = format!("{prefix}\\Lib\\site-packages");
    let mut env = torch_env(prefix, version, cuda, others);
    env.kind = PythonEnvKind::System;
    env.found_via = vec!["portable layout".into()];
    env.interpreter = Some(format!("{prefix}\\python.exe"));
    env.site_packages = vec![sp.clone()];
    for p in &mut env.packages {
        p.location = sp.clone();
    }
    if let Some(t) = &mut env.torch {
        t.path = format!("{sp}\\torch");
    }
    env.windows = true;
    env
}

/// An environment at `/v` with `packages` in its site directory (`lib/python<site>`), its
/// interpreter `python_version`: the rest is the caller's to fill (frameworks, declared pins).
pub fn packages_env(site: &str, python_version: &str, packages: &[(&str, &str)]) -> PythonEnv {
    let sp = format!("/v/lib/python{site}/site-packages");
    PythonEnv {
        prefix: "/v".into(),
        python_version: Some(python_version.into()),
        site_packages: vec![sp.clone()],
        packages: packages
            .iter()
            .map(|(n, v)| Package {
                name: n.to_string(),
                version: v.to_string(),
                location: sp.clone(),
            })
            .collect(),
        ..Default::default()
    }
}

pub fn torch_env(
    prefix: &str,
    version: &str,
    cuda: Option<&str>,
    others: &[(&str, &str)],
) -> PythonEnv {
    let sp = format!("{prefix}/lib/python3.12/site-packages");
    let mut packages = vec![Package {
        name: "torch".into(),
        version: version.into(),
        location: sp.clone(),
    }];
    for (n, v) in others {
        packages.push(Package {
            name: n.to_string(),
            version: v.to_string(),
            location: sp.clone(),
        });
    }
    PythonEnv {
        prefix: prefix.into(),
        kind: PythonEnvKind::Venv,
        found_via: vec!["VIRTUAL_ENV".into()],
        python_version: Some("3.12".into()),
        site_packages: vec![sp.clone()],
        packages,
        torch: Some(TorchBuild {
            version: version.into(),
            cuda: cuda.map(str::to_string),
            path: format!("{sp}/torch"),
            ..Default::default()
        }),
        ..Default::default()
    }
}
