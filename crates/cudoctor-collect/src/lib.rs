//! Probes that read a machine's CUDA stack into a [`Snapshot`]. Collection never judges and never
//! fails as a whole: each probe records what it found or why it found nothing.

pub mod allocator;
pub mod build_tools;
pub mod cccl;
pub mod deep;
pub mod discovery;
pub mod disk;
pub mod driver;
pub mod health;
pub mod host;
pub mod host_config;
pub mod import_model;
pub mod kernels;
pub mod libraries;
pub mod mapped_reads;
pub mod multigpu;
pub mod network;
mod nvml;
pub mod platform;
pub mod python;
pub mod run;
pub mod runner;
pub mod scope;
pub mod security;
pub mod timings;
pub mod toolkit;
pub mod watchdog;
pub mod windows;

use std::sync::Mutex;
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use cudoctor_snapshot::{recorded_env, Snapshot};
use cudoctor_types::ThreadBudget;

pub use timings::Timings;

pub use host::Host;
pub use scope::{Part, Scope};

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
    /// The project directory searched for CUDA binaries built in it (a machine path):
    /// `check PATH`, or the current directory when it is a Python project's root.
    pub project: Option<discovery::ProjectDir>,
    /// What is read: everything `check` judges unless narrowed ([`Scope`]).
    pub scope: Scope,
}

/// Reads the machine behind `host`. Independent probes run on their own threads.
pub fn collect(host: &Host, options: &Options, tool_version: &str) -> Snapshot {
    // A read blocked in the kernel (a hung mount) ends cudoctor with a message, not a hang.
    let _watchdog = host
        .deadline()
        .budget_s()
        .map(|s| watchdog::arm(std::time::Duration::from_secs_f64(s)));
    let mut snap = Snapshot::new(
        tool_version,
        &cudoctor_types::os_text::from_path(host.root()),
    );
    snap.collected_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs());
    snap.env = recorded_env(host.env());
    if !options.scope.is_everything() {
        scope::collect_parts(host, options, &mut snap);
        return snap;
    }
    // `--deep` runs the environment's interpreter: a daemon it starts in a session of its own
    // is re-parented to cudoctor and killed (runner::sweep_orphans), not left running.
    let subreaper = options.deep.is_some() && host.runs_programs() && runner::become_subreaper();
    let timings = timings::global();
    thread::scope(|s| {
        // The driver's facts and the GPU topology come from one session of its libraries.
        let driver = s.spawn(|| timings.time("driver", || driver::collect_with_topology(host)));
        let platform = s.spawn(|| timings.time("platform", || platform::collect(host)));
        let host_facts = s.spawn(|| platform::host_facts(host));
        let health = s.spawn(|| timings.time("health", || health::collect(host)));
        let windows =
            s.spawn(|| timings.time("windows", || windows::collect(host, &options.python)));
        // Each environment's wheel check, listing and emulation start as soon as its packages
        // are read (`Stages`); what needs its frameworks or every environment waits for the
        // whole reading. The reading itself runs on this thread, beside them.
        let (found, windows_envs) = timings.time("python-find", || {
            (
                python::find(host, &options.python),
                windows::python_envs(host, &options.python),
            )
        });
        let stages = Stages::new(found.len() + windows_envs.len());
        for (i, env) in windows_envs.iter().enumerate() {
            stages.packages_read(found.len() + i, env);
        }
        // Which binaries load from outside the site directories (JIT builds, editable trees,
        // PYTHONPATH, the project): on a thread beside the wheels, the listings and the
        // emulations, which need it only at their ends; made once, by the first to ask.
        let discovered = std::sync::OnceLock::new();
        let discovery = || {
            discovered.get_or_init(|| {
                let envs = stages.whole();
                timings.time("discovery", || {
                    discovery::collect(host, envs, options.project.as_ref())
                })
            })
        };
        let (wheel_checks, framework_needs) = thread::scope(|s| {
            let stages = &stages;
            let discovery = &discovery;
            s.spawn(discovery);
            let toolkit = s.spawn(|| {
                let envs = stages.whole();
                timings.time("toolkit", || toolkit::collect(host, envs))
            });
            let nccl = s.spawn(|| multigpu::nccl_libraries(host, stages.whole()));
            let rendezvous = s.spawn(|| {
                options.deep.as_ref().and_then(|d| {
                    let envs = stages.whole();
                    timings.time("rendezvous", || {
                        network::rendezvous(host, envs, d.timeout.min(RENDEZVOUS_TIMEOUT))
                    })
                })
            });
            let wheels = s.spawn(|| {
                let envs: Vec<usize> = (0..stages.len()).collect();
                // Its span starts at the first environment's packages.
                stages.packages(0);
                timings.time("wheels", || {
                    on_workers(&envs, |&i| {
                        stages
                            .packages(i)
                            .and_then(|e| python::record::check(host, e, options.wheel_hashing))
                    })
                })
            });
            // Each environment's listing, then its loader emulation, on workers of their own;
            // the kernel scan of all listings runs beside the emulations.
            let binaries = s.spawn(|| binaries(host, stages, discovery, options, timings));
            {
                // Every slot is filled when this ends, a reader's panic included.
                let _closing = Closing(stages);
                let mut envs = timings.time("python", || {
                    python::read(host, &found, &|i, env| stages.packages_read(i, env))
                });
                envs.extend(windows_envs);
                stages.close(envs);
            }
            if let Some(deep_options) = &options.deep {
                snap.deep = Some(
                    timings.time("deep", || deep::collect(host, stages.whole(), deep_options)),
                );
                runner::sweep_orphans();
            }
            let framework_needs;
            (snap.kernel_images, snap.loader, framework_needs) =
                binaries.join().unwrap_or_default();
            let (driver, mut multigpu) = driver.join().unwrap_or_default();
            snap.driver = driver;
            multigpu.nccl_libraries = nccl.join().unwrap_or_default();
            multigpu.network = Some(network::collect(host));
            multigpu.rendezvous = rendezvous.join().unwrap_or_default();
            snap.multigpu = Some(multigpu);
            snap.toolkit = toolkit.join().unwrap_or_default();
            (wheels.join().unwrap_or_default(), framework_needs)
        });
        let mut envs = stages.into_whole();
        for (env, check) in envs.iter_mut().zip(wheel_checks) {
            env.wheel_check = check;
        }
        for (env, needs) in envs.iter_mut().zip(framework_needs.unwrap_or_default()) {
            for (b, n) in env.frameworks.iter_mut().zip(needs) {
                b.unresolved = n;
            }
        }
        snap.binaries = Some(discovered.into_inner().unwrap_or_else(|| {
            // Its thread panicked: once more here, as before it had a thread.
            discovery::collect(host, &envs, options.project.as_ref())
        }));
        snap.python_envs = envs;
        snap.platform = platform.join().unwrap_or_default();
        snap.host = host_facts.join().unwrap_or_default();
        snap.health = health.join().unwrap_or_default();
        snap.windows = windows.join().unwrap_or_default();
    });
    snap.stopped_early = host.stopped_early();
    if subreaper {
        // The rendezvous probe's escapees too, now that every probe has ended.
        runner::sweep_orphans();
    }
    snap
}

/// How many environments are worked on at once: half of the process's thread budget
/// (each environment's own work spreads over the budget's threads too), at least one.
fn env_workers(envs: usize) -> usize {
    (ThreadBudget::process().limit() / 2).clamp(1, envs.max(1))
}

/// `work` on each item, a few items at a time ([`env_workers`]); the results in item order
/// (`R::default()` for an item whose work panicked).
fn on_workers<T: Sync, R: Send + Default>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    ThreadBudget::process()
        .map(items, env_workers(items.len()), work)
        .into_iter()
        .map(Result::unwrap_or_default)
        .collect()
}

/// The Python environments of a check as their reading goes: each one with its site
/// directories and packages as soon as they are read (what the wheel check, the listing and the
/// loader emulation need), and all of them whole (frameworks, declared requirements, installer)
/// once every one is read. Every slot is filled in the end, a reader's panic included
/// ([`Closing`]), so nothing waits for a reading that never ends.
struct Stages {
    packages: Vec<std::sync::OnceLock<Option<cudoctor_snapshot::PythonEnv>>>,
    whole: std::sync::OnceLock<Vec<cudoctor_snapshot::PythonEnv>>,
}

impl Stages {
    fn new(envs: usize) -> Stages {
        Stages {
            packages: (0..envs).map(|_| std::sync::OnceLock::new()).collect(),
            whole: std::sync::OnceLock::new(),
        }
    }

    fn len(&self) -> usize {
        self.packages.len()
    }

    /// Environment `i` once its packages are read (its frameworks and the rest perhaps not
    /// yet), waiting for them; `None` when its reading failed or there is no such environment.
    fn packages(&self, i: usize) -> Option<&cudoctor_snapshot::PythonEnv> {
        self.packages.get(i)?.wait().as_ref()
    }

    /// Every environment whole, waiting for the end of the reading (none when it failed).
    fn whole(&self) -> &[cudoctor_snapshot::PythonEnv] {
        self.whole.wait()
    }

    /// Environment `i` whole, waiting for the end of the reading.
    fn whole_env(&self, i: usize) -> Option<&cudoctor_snapshot::PythonEnv> {
        self.whole().get(i)
    }

    fn packages_read(&self, i: usize, env: &cudoctor_snapshot::PythonEnv) {
        if let Some(slot) = self.packages.get(i) {
            let _ = slot.set(Some(env.clone()));
        }
    }

    /// The reading's end: the whole environments, and nothing for a slot still empty.
    fn close(&self, envs: Vec<cudoctor_snapshot::PythonEnv>) {
        for slot in &self.packages {
            let _ = slot.set(None);
        }
        let _ = self.whole.set(envs);
    }

    fn into_whole(self) -> Vec<cudoctor_snapshot::PythonEnv> {
        self.whole.into_inner().unwrap_or_default()
    }
}

/// Closes [`Stages`] with no environments when the reading ends without closing them (a
/// reader's panic, which is still the caller's).
struct Closing<'a>(&'a Stages);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.close(Vec::new());
    }
}

/// What each framework build needs that the loader finds nowhere, per env and build.
type FrameworkNeeds = Vec<Vec<Vec<cudoctor_snapshot::UnresolvedNeed>>>;

/// The kernel images, the loader's facts and the frameworks' unresolved needs of `envs`.
///
/// A few environment workers ([`env_workers`]) each take the next environment, start its
/// emulation beside its listing, and list it; once every environment is listed they emulate
/// the ones not started. An emulation needs its environment's listing only for the extensions,
/// which it loads after torch's own libraries, so torch's loading overlaps the listing; the
/// listing is made once, by whichever of the two asks first (the other waits for it). At most
/// [`env_workers`] emulations start early, so the memory of their symbol tables stays bounded.
/// The kernel scan needs every listing and runs on the calling thread beside the emulations.
/// Threads are drawn from the process's [`ThreadBudget`], so the pools inside an emulation
/// (symbol tables) and a listing (the walk) share the same threads instead of adding their own.
fn binaries<'d>(
    host: &Host,
    stages: &Stages,
    discovery: &(dyn Fn() -> &'d cudoctor_snapshot::BinaryDiscovery + Sync),
    options: &Options,
    timings: &Timings,
) -> (
    Option<cudoctor_snapshot::KernelImages>,
    Option<cudoctor_snapshot::LoaderFacts>,
    Option<FrameworkNeeds>,
) {
    let budget = ThreadBudget::process();
    let count = stages.len();
    let workers = env_workers(count);
    let listings: Vec<std::sync::OnceLock<Vec<(String, String)>>> =
        (0..count).map(|_| std::sync::OnceLock::new()).collect();
    // Asked at the end of a listing and at an emulation's extensions, so the discovery runs
    // beside both.
    let found: std::sync::OnceLock<Found<'d>> = std::sync::OnceLock::new();
    let found = || found.get_or_init(|| found_binaries(stages.whole(), discovery()));
    let outside = |i: usize| -> &[String] { found().0.get(i).map(Vec::as_slice).unwrap_or(&[]) };
    // Environment i's listing, made by the first to ask (a panic in it leaves the cell empty,
    // and the next to ask makes it again: nobody waits for a listing that never comes), with
    // the CUDA binaries it loads from outside its site directories.
    let list = |i: usize| -> &[(String, String)] {
        listings[i].get_or_init(|| {
            timings.time("listing", || {
                let env = stages.packages(i).map(std::slice::from_ref).unwrap_or(&[]);
                env_listing(host, env, outside(i), &found().1, discovery())
            })
        })
    };
    let results: Mutex<Vec<Option<EnvResult>>> = Mutex::new((0..count).map(|_| None).collect());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = std::sync::atomic::AtomicUsize::new(0);
    // Listed environments whose emulation nobody has started, in the order they were listed.
    let ready: Mutex<std::collections::VecDeque<usize>> = Mutex::default();
    // One message per finished listing, for the kernel scan; the channel also closes once
    // every worker is gone (a worker that panicked sends nothing).
    let (listed, listed_rx) = std::sync::mpsc::channel::<()>();
    let emulate = |i: usize| {
        let Some(env) = stages.packages(i) else {
            return;
        };
        let whole = || stages.whole_env(i);
        let result = emulate_env(host, env, whole, budget, timings, || list(i), || outside(i));
        if let Ok(mut all) = results.lock() {
            all[i] = Some(result);
        }
    };
    let emulate = &emulate;
    let work = |listed: std::sync::mpsc::Sender<()>| {
        thread::scope(|s| {
            let mut early = Vec::new();
            // Listing first, while an environment is unlisted: the kernel scan waits for them
            // all. Its emulation starts beside it while few have started early.
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= count {
                    break;
                }
                // Nothing of it can start before its packages are read.
                stages.packages(i);
                if !options.skip_loader {
                    if started.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < workers {
                        early.push(budget.spawn_or_run(s, move || emulate(i)));
                    } else if let Ok(mut r) = ready.lock() {
                        r.push_back(i);
                    }
                }
                list(i);
                // A closed channel only means the kernel scan is not waiting.
                let _ = listed.send(());
            }
            drop(listed);
            // Then the emulations not started. Every listed environment is queued before its
            // worker gets here, so the queue is empty only once each has been taken.
            loop {
                // The lock is held only to take the next one, not through an emulation.
                let i = ready.lock().ok().and_then(|mut r| r.pop_front());
                let Some(i) = i else { break };
                emulate(i);
            }
            for e in early {
                let _ = e.join();
            }
        })
    };
    let work = &work;
    let images = thread::scope(|s| {
        let workers: Vec<_> = (0..workers)
            .map(|_| {
                let listed = listed.clone();
                budget.spawn_or_run(s, move || work(listed))
            })
            .collect();
        drop(listed);
        for _ in 0..count {
            if listed_rx.recv().is_err() {
                break;
            }
        }
        let candidates = scan_candidates(&listings, discovery());
        let images = (!options.skip_kernel_scan)
            .then(|| scan_kernels(host, stages.whole(), &candidates, timings));
        for w in workers {
            let _ = w.join();
        }
        images
    });
    if options.skip_loader {
        return (images, None, None);
    }
    let (facts, needs) = gather(results.into_inner().unwrap_or_default());
    (images, Some(facts), Some(needs))
}

/// One environment's emulated loading, and what its frameworks' libraries need where the
/// loader finds nothing.
type EnvResult = (
    Option<libraries::EnvLoader>,
    Vec<Vec<cudoctor_snapshot::UnresolvedNeed>>,
);

/// The CUDA binaries each environment loads from outside its site directories, and every
/// binary the discovery found.
type Found<'d> = (Vec<Vec<String>>, std::collections::HashSet<&'d str>);

fn found_binaries<'d>(
    envs: &[cudoctor_snapshot::PythonEnv],
    discovery: &'d cudoctor_snapshot::BinaryDiscovery,
) -> Found<'d> {
    let outside = envs
        .iter()
        .map(|e| {
            discovery
                .binaries
                .iter()
                .filter(|b| b.env_prefix.as_deref() == Some(e.prefix.as_str()))
                .map(|b| b.path.clone())
                .collect()
        })
        .collect();
    let all = discovery.binaries.iter().map(|b| b.path.as_str()).collect();
    (outside, all)
}

/// The binaries of `env` (one environment, or none) to scan, by owner, with the CUDA binaries
/// it loads from outside its site directories (`found_here`). A found binary is listed under
/// its origin, by the environment that loads it.
fn env_listing(
    host: &Host,
    env: &[cudoctor_snapshot::PythonEnv],
    found_here: &[String],
    all_found: &std::collections::HashSet<&str>,
    discovery: &cudoctor_snapshot::BinaryDiscovery,
) -> Vec<(String, String)> {
    let mut listing = kernels::candidates(host, env);
    listing.retain(|(p, _)| !all_found.contains(p.as_str()));
    listing.extend(
        discovery
            .binaries
            .iter()
            .filter(|b| found_here.contains(&b.path))
            .map(|b| (b.path.clone(), kernels::discovered_owner(b))),
    );
    listing
}

/// The loader's emulation of `env`, and beside it (a process of its own, as torch's own
/// loading is the loader's) what each other framework's libraries need where the loader cannot
/// find it.
fn emulate_env<'l>(
    host: &Host,
    env: &cudoctor_snapshot::PythonEnv,
    whole: impl Fn() -> Option<&'l cudoctor_snapshot::PythonEnv> + Sync,
    budget: &ThreadBudget,
    timings: &Timings,
    list: impl Fn() -> &'l [(String, String)] + Sync,
    outside: impl Fn() -> &'l [String] + Sync,
) -> EnvResult {
    // What each framework's own libraries need where the loader cannot find it (torch's own
    // loading is the loader's): a process of its own, beside torch's, whose libraries opened
    // by name are then marked where torch's import loads them.
    thread::scope(|s| {
        // The frameworks are read after the packages: this waits for the whole environment,
        // so without a thread free it runs after the emulation, not before it.
        let links = budget.spawn_or_defer(s, || {
            let env = whole()?;
            Some(timings.time("framework-loader", || {
                env.frameworks
                    .iter()
                    .map(|b| {
                        (b.framework != cudoctor_snapshot::Framework::Torch)
                            .then(|| libraries::framework_links(host, b))
                    })
                    .collect::<Vec<_>>()
            }))
        });
        let loader = timings.time("loader", || {
            libraries::collect_env(host, env, list, outside)
        });
        let links = links.join().unwrap_or_default();
        let needs = match (links, whole()) {
            (Some(links), Some(env)) => links
                .into_iter()
                .map(|l| {
                    l.map(|mut l| {
                        libraries::mark_after_import(&mut l, loader.as_ref().map(|e| &e.process));
                        libraries::unresolved_needs(host, env, &l)
                    })
                    .unwrap_or_default()
                })
                .collect(),
            _ => Vec::new(),
        };
        (loader, needs)
    })
}

/// Every listing, in the order of the environments, each path once (its owner the first
/// environment's that lists it), then the binaries no inspected environment loads (JIT builds
/// of another Python or torch): they are still read, their folder says whose they are.
fn scan_candidates(
    listings: &[std::sync::OnceLock<Vec<(String, String)>>],
    discovery: &cudoctor_snapshot::BinaryDiscovery,
) -> Vec<(String, String)> {
    let mut candidates: Vec<(String, String)> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (path, owner) in listings.iter().filter_map(|l| l.get()).flatten() {
        if seen.insert(path) {
            candidates.push((path.clone(), owner.clone()));
        }
    }
    for b in &discovery.binaries {
        if seen.insert(&b.path) {
            candidates.push((b.path.clone(), kernels::discovered_owner(b)));
        }
    }
    candidates
}

/// The kernel images of the candidates and of the frameworks' own libraries, with the
/// dispatch's optional ones marked.
fn scan_kernels(
    host: &Host,
    envs: &[cudoctor_snapshot::PythonEnv],
    candidates: &[(String, String)],
    timings: &Timings,
) -> cudoctor_snapshot::KernelImages {
    timings.time("kernels", || {
        let mut images = kernels::scan_extensions(
            host,
            &kernels::with_framework_libraries(host, envs, candidates),
        );
        timings.time("dispatch", || {
            python::dispatch::mark_optional(host, envs, &mut images)
        });
        images
    })
}

/// The loader's facts of every environment together, and each one's frameworks' needs.
fn gather(results: Vec<Option<EnvResult>>) -> (cudoctor_snapshot::LoaderFacts, FrameworkNeeds) {
    let mut facts = cudoctor_snapshot::LoaderFacts::default();
    let mut needs: FrameworkNeeds = Vec::new();
    for r in results {
        let (loader, env_needs) = r.unwrap_or_default();
        if let Some(one) = loader {
            libraries::add(&mut facts, one);
        }
        needs.push(env_needs);
    }
    (facts, needs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environments_packages_are_there_before_the_reading_ends_and_nothing_waits_forever() {
        let stages = Stages::new(2);
        let env = |p: &str| cudoctor_snapshot::PythonEnv {
            prefix: p.into(),
            ..Default::default()
        };
        thread::scope(|s| {
            let early = s.spawn(|| stages.packages(0).map(|e| e.prefix.clone()));
            let rest = s.spawn(|| (stages.packages(1).is_none(), stages.whole().len()));
            // A reader that publishes one environment's packages and then panics: the first
            // waiter has its environment, the others are released with nothing.
            let reading = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _closing = Closing(&stages);
                stages.packages_read(0, &env("/a"));
                assert_eq!(early.join().unwrap().as_deref(), Some("/a"));
                panic!("a reader failed");
            }));
            assert!(reading.is_err());
            assert_eq!(rest.join().unwrap(), (true, 0));
        });
        // A reading that ends well: every environment whole, in order.
        let stages = Stages::new(2);
        stages.packages_read(1, &env("/b"));
        stages.close(vec![env("/a"), env("/b")]);
        assert_eq!(stages.packages(0).map(|e| e.prefix.as_str()), None);
        assert_eq!(stages.packages(1).map(|e| e.prefix.as_str()), Some("/b"));
        assert_eq!(stages.whole_env(1).map(|e| e.prefix.as_str()), Some("/b"));
        assert_eq!(stages.into_whole().len(), 2);
    }
}
