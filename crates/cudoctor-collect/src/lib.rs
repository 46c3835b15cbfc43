//! Probes that read a machine's CUDA stack into a [`Snapshot`]. Collection never judges and never
//! fails as a whole: each probe records what it found or why it found nothing.

pub mod deep;
pub mod driver;
pub mod host;
pub mod import_model;
pub mod kernels;
pub mod libraries;
pub mod multigpu;
pub mod network;
mod nvml;
pub mod platform;
pub mod python;
pub mod run;
pub mod runner;
pub mod security;
pub mod toolkit;

use std::sync::Mutex;
use std::thread;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cudoctor_snapshot::{recorded_env, Snapshot};

pub use host::Host;

/// Longest the `--deep` rendezvous check may take (torch's import included).
const RENDEZVOUS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// What to collect beyond the default facts.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Interpreters or environment prefixes given with `--python`.
    pub python: Vec<String>,
    /// Run the runtime probes (`--deep`) with these options; `None` leaves them out.
    pub deep: Option<deep::DeepOptions>,
    /// Skip reading the kernel images of torch and its extensions.
    pub skip_kernel_scan: bool,
    /// Skip emulating the dynamic loader for torch and its extensions.
    pub skip_loader: bool,
    /// How many wheel files to hash against their RECORD (sizes are always checked).
    pub wheel_hashing: python::record::Hashing,
}

/// Reads the machine behind `host`. Independent probes run on their own threads.
pub fn collect(host: &Host, options: &Options, tool_version: &str) -> Snapshot {
    let mut snap = Snapshot::new(
        tool_version,
        &cudoctor_types::os_text::from_path(host.root()),
    );
    snap.collected_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs());
    snap.env = recorded_env(host.env());
    let timings = Timings::from_env(host);
    thread::scope(|s| {
        let driver = s.spawn(|| timings.time("driver", || driver::collect(host)));
        let topology = s.spawn(|| timings.time("topology", || multigpu::topology_facts(host)));
        let platform = s.spawn(|| timings.time("platform", || platform::collect(host)));
        let host_facts = s.spawn(|| platform::host_facts(host));
        let envs = timings.time("python", || python::collect(host, &options.python));
        let (wheel_checks, framework_needs) = thread::scope(|s| {
            let envs = &envs;
            let toolkit = s.spawn(|| timings.time("toolkit", || toolkit::collect(host, envs)));
            let nccl = s.spawn(|| multigpu::nccl_libraries(host, envs));
            let rendezvous = s.spawn(|| {
                options.deep.as_ref().and_then(|d| {
                    timings.time("rendezvous", || {
                        network::rendezvous(host, envs, d.timeout.min(RENDEZVOUS_TIMEOUT))
                    })
                })
            });
            let wheels = s.spawn(|| {
                timings.time("wheels", || {
                    envs.iter()
                        .map(|e| python::record::check(host, e, options.wheel_hashing))
                        .collect::<Vec<_>>()
                })
            });
            // The kernel scan and the loader emulation read the same libraries, side by side.
            let binaries = s.spawn(|| {
                let candidates = timings.time("listing", || kernels::candidates(host, envs));
                thread::scope(|s| {
                    let images = s.spawn(|| {
                        (!options.skip_kernel_scan).then(|| {
                            timings.time("kernels", || {
                                kernels::scan_extensions(
                                    host,
                                    &kernels::with_framework_libraries(host, envs, &candidates),
                                )
                            })
                        })
                    });
                    let loader = (!options.skip_loader).then(|| {
                        timings.time("loader", || libraries::collect(host, envs, &candidates))
                    });
                    // What each framework's own libraries need where the loader cannot find
                    // it (off the critical path: the RECORD check takes longer).
                    let framework_needs = loader
                        .as_ref()
                        .map(|_| timings.time("framework-loader", || framework_needs(host, envs)));
                    (images.join().unwrap_or_default(), loader, framework_needs)
                })
            });
            if let Some(deep_options) = &options.deep {
                snap.deep = Some(timings.time("deep", || deep::collect(host, envs, deep_options)));
            }
            let framework_needs;
            (snap.kernel_images, snap.loader, framework_needs) =
                binaries.join().unwrap_or_default();
            let mut multigpu = topology.join().unwrap_or_default();
            multigpu.nccl_libraries = nccl.join().unwrap_or_default();
            multigpu.network = Some(network::collect(host));
            multigpu.rendezvous = rendezvous.join().unwrap_or_default();
            snap.multigpu = Some(multigpu);
            snap.toolkit = toolkit.join().unwrap_or_default();
            (wheels.join().unwrap_or_default(), framework_needs)
        });
        let mut envs = envs;
        for (env, check) in envs.iter_mut().zip(wheel_checks) {
            env.wheel_check = check;
        }
        for (env, needs) in envs.iter_mut().zip(framework_needs.unwrap_or_default()) {
            for (b, n) in env.frameworks.iter_mut().zip(needs) {
                b.unresolved = n;
            }
        }
        snap.python_envs = envs;
        snap.driver = driver.join().unwrap_or_default();
        snap.platform = platform.join().unwrap_or_default();
        snap.host = host_facts.join().unwrap_or_default();
    });
    timings.report();
    snap
}

/// For each env, for each of its framework builds (torch's own loading is the loader's), the
/// libraries its shipped objects need that the loader finds nowhere.
fn framework_needs(
    host: &Host,
    envs: &[cudoctor_snapshot::PythonEnv],
) -> Vec<Vec<Vec<cudoctor_snapshot::UnresolvedNeed>>> {
    envs.iter()
        .map(|env| {
            env.frameworks
                .iter()
                .map(|b| match b.framework {
                    cudoctor_snapshot::Framework::Torch => Vec::new(),
                    _ => libraries::unresolved_needs(host, env, b),
                })
                .collect()
        })
        .collect()
}

/// Per-probe wall times, printed to stderr when CUDOCTOR_TIMINGS is set (for benchmarking where
/// the time of a check goes; off by default).
struct Timings {
    enabled: bool,
    started: Instant,
    spans: Mutex<Vec<(&'static str, f64, f64)>>,
}

impl Timings {
    fn from_env(host: &Host) -> Self {
        Timings {
            enabled: host.var("CUDOCTOR_TIMINGS").is_some(),
            started: Instant::now(),
            spans: Mutex::new(Vec::new()),
        }
    }

    fn time<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        if !self.enabled {
            return f();
        }
        let begin = self.started.elapsed().as_secs_f64() * 1e3;
        let out = f();
        let end = self.started.elapsed().as_secs_f64() * 1e3;
        if let Ok(mut spans) = self.spans.lock() {
            spans.push((name, begin, end));
        }
        out
    }

    fn report(&self) {
        if !self.enabled {
            return;
        }
        if let Ok(spans) = self.spans.lock() {
            for (name, begin, end) in spans.iter() {
                eprintln!(
                    "cudoctor timing: {name:9} {begin:7.1} ms -> {end:7.1} ms ({:.1} ms)",
                    end - begin
                );
            }
        }
    }
}
