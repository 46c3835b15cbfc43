//! Probes that read a machine's CUDA stack into a [`Snapshot`]. Collection never judges and never
//! fails as a whole: each probe records what it found or why it found nothing.

pub mod deep;
pub mod driver;
pub mod host;
pub mod kernels;
pub mod libraries;
pub mod multigpu;
pub mod platform;
pub mod python;
pub mod toolkit;

use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use cudoctor_snapshot::{relevant_variable, Snapshot};

pub use host::Host;

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
}

/// Reads the machine behind `host`. Independent probes run on their own threads.
pub fn collect(host: &Host, options: &Options, tool_version: &str) -> Snapshot {
    let mut snap = Snapshot::new(tool_version, &host.root().to_string_lossy());
    snap.collected_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs());
    snap.env = host
        .env()
        .iter()
        .filter(|(k, _)| relevant_variable(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    thread::scope(|s| {
        let driver = s.spawn(|| driver::collect(host));
        let platform = s.spawn(|| platform::collect(host));
        let host_facts = s.spawn(|| platform::host_facts(host));
        let envs = python::collect(host, &options.python);
        let toolkit = toolkit::collect(host, &envs);
        if !options.skip_kernel_scan {
            snap.kernel_images = Some(kernels::collect(host, &envs));
        }
        if !options.skip_loader {
            snap.loader = Some(libraries::collect(host, &envs, snap.kernel_images.as_ref()));
        }
        snap.multigpu = Some(multigpu::collect(host, &envs));
        if let Some(deep_options) = &options.deep {
            snap.deep = Some(deep::collect(host, &envs, deep_options));
        }
        snap.python_envs = envs;
        snap.toolkit = toolkit;
        snap.driver = driver.join().unwrap_or_default();
        snap.platform = platform.join().unwrap_or_default();
        snap.host = host_facts.join().unwrap_or_default();
    });
    snap
}
