//! The Snapshot: every fact cudoctor collects about a machine, and nothing it concludes.
//!
//! This crate is the contract between collection (I/O) and analysis (pure rules). It holds plain
//! data only. Facts keep the raw spelling they were read in (`"580.159.04"`, `"9.0"`); the rules
//! parse them with the knowledge base's version types. A fact that could not be read is absent
//! and the reason is kept in an [`Attempt`], so a report can say why it does not know.

mod binaries;
mod deep;
mod driver;
mod environment;
mod frameworks;
pub mod health;
mod images;
mod migrate;
mod multigpu;
mod network;
mod platform;
mod python;
mod run;
mod security;
mod stopped;
mod toolkit;
mod wheels;
pub mod windows;

pub use binaries::{
    parse_build_folder, torch_build_folder, BinaryDiscovery, BinaryOrigin, EditableVia,
    FoundBinary, PlaceKind, SearchedPlace,
};
pub use deep::{
    signal_name, AllReduceFailure, AllReduceProbe, AllReduceRun, ApiGap, CompileFallbackCause,
    CompileProbe, CudaRuntime, DeepFacts, DeviceProbe, ExtensionFailure, ExtensionProbe,
    FrameworkError, FrameworkProbe, FrameworkProbeResult, MathSettings, ProbeEnding, ProbeResult,
    ProbeRun, ProbeStage, ProbeStatus, PythonInfo, RaisedError, SdpaBackend, SdpaBackendProbe,
    SdpaDefault, SdpaProbe, SdpaRun, StageTime, TorchInfo, COMPILE_SWITCHES,
};
pub use driver::{
    is_windows_exception, is_windows_start_failure, windows_exception, windows_exception_name,
    DriverFacts, Gpu, GpuProcess, KernelModule, KernelModuleFlavour, LibrariesFailed,
    LibraryFailure,
};
pub use environment::{recorded_env, redact_url_credentials, relevant_variable, EnvVars, REDACTED};
pub use frameworks::{
    CompanionPin, CudaBinding, DeclaredRequirements, Framework, FrameworkBuild, NeedKind,
    RecordedTorch, UnresolvedNeed,
};
pub use health::{
    CurrentPending, DcgmDiag, DcgmTest, EccCounts, GpuHealth, HealthFacts, KernelLog,
    KernelLogRead, NvLinkErrors, NvmlQuery, PcieLink, RowRemap, XidEvent,
};
pub use images::{
    AfterImport, CachedLibrary, ConditionalLoad, FileVersion, FrameworkLinks, KernelImages,
    LibraryImages, LibraryLinks, LinkedLibrary, LoadCondition, LoadStage, LoaderFacts, OpenedBy,
    Opener, ProcessLinks, RuntimeDir, ShadowedLibrary, VersionSource,
};
pub use multigpu::{
    GpuPair, LinkClass, MultiGpuFacts, NcclLibrary, NvLink, P2pStatus, PathLevel, Topology,
    TopologyGpu,
};
pub use network::{IbDevice, IbPort, NetInterface, NetworkFacts, RendezvousProbe, TcpConnect};
pub use platform::{
    CgroupDevices, ContainerFacts, ContainerGpuAccess, NodeOpen, PlatformFacts, NVIDIACTL_MINOR,
    NVIDIA_MAJOR,
};
pub use python::{
    CondaPackage, EnvInstaller, EnvProject, Installer, NumpyOnePin, Package, ProjectKind,
    PythonEnv, PythonEnvKind, PythonHeaders, PythonOrigin, TorchBuild, FOUND_VIA_PYTHON_OPTION,
};
pub use run::{
    median, ChildExit, CollectiveCalls, CollectiveObservation, CompileObservation, CompileRequest,
    Counted, ExtensionCalls, FailureLibrary, MemoryObservation, MemorySample, ObservedFailure,
    ObservedTorch, ObserverCost, ObserverSite, ProcessRecord, ProfileWindow, ProfiledKernel,
    RunFacts, SdpaCost, SdpaGroup, SdpaObservation, SdpaRejection, SdpaSwitches, StepObservation,
    OBSERVER_VERSION,
};
pub use security::{
    ApparmorFacts, Confinement, DenialSource, SecurityDenial, SecurityFacts, SecurityModule,
    SelinuxFacts,
};
pub use stopped::{ScanKind, StopReason, StoppedEarly};
pub use toolkit::{
    BuildTools, CcclHeaders, CompilerFamily, CompilerRange, HeaderInclude, HostCompiler,
    HostCompilerSupport, LinkDir, NvccOnPath, ProgramLookup, SymlinkChain, Toolkit, ToolkitFacts,
};
pub use wheels::{DamagedFile, FileProblem, PathOwner, SharedPath, WheelCheck};

use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or is removed; adding optional fields keeps it.
/// Files of an earlier version still load: [`from_json`] migrates them (see `migrate/` for
/// what each version changed).
pub const SCHEMA_VERSION: u32 = 3;

/// Everything known about one machine at one moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub schema_version: u32,
    /// The cudoctor version that collected it.
    pub tool_version: String,
    /// Seconds since the Unix epoch when collection started (absent in fixtures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected_at: Option<u64>,
    /// The filesystem root the facts were read under ("/" on a real machine).
    pub root: String,
    #[serde(default)]
    pub host: HostFacts,
    #[serde(default)]
    pub driver: DriverFacts,
    #[serde(default)]
    pub toolkit: ToolkitFacts,
    #[serde(default)]
    pub python_envs: Vec<PythonEnv>,
    /// The environment variables that bear on CUDA, by name.
    #[serde(default)]
    pub env: EnvVars,
    #[serde(default)]
    pub platform: PlatformFacts,
    /// Kernel images of CUDA libraries; absent when that probe did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_images: Option<KernelImages>,
    /// What the dynamic loader would resolve; absent when that probe did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader: Option<LoaderFacts>,
    /// CUDA binaries outside the site directories' packages (torch's extension cache,
    /// editable installs, PYTHONPATH, the project); absent when that search did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binaries: Option<BinaryDiscovery>,
    /// Results of runtime probes (`--deep`); absent when they did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deep: Option<DeepFacts>,
    /// GPU topology and NCCL libraries; absent when that probe did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multigpu: Option<MultiGpuFacts>,
    /// The machine under the stack: nouveau, the kernel log's Xid events, a `dcgmi diag` result
    /// on disk (each GPU's own health is in its [`Gpu::health`]); absent when not collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthFacts>,
    /// A Windows machine's DLL facts; absent on other machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<windows::WindowsFacts>,
    /// What each framework build besides torch loads of its shipped libraries, each in a
    /// process of its own: read for `cudoctor libs` (check records their unresolved needs in
    /// each build instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub framework_links: Vec<FrameworkLinks>,
    /// Loops that stopped before the end of their input (a deadline, a cap): what the check
    /// did not look at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped_early: Vec<StoppedEarly>,
}

impl Snapshot {
    pub fn new(tool_version: &str, root: &str) -> Self {
        Snapshot {
            schema_version: SCHEMA_VERSION,
            tool_version: tool_version.to_string(),
            root: root.to_string(),
            ..Default::default()
        }
    }

    /// The Python environment rules speak of first: the one the user asked for or activated.
    pub fn primary_env(&self) -> Option<&PythonEnv> {
        self.python_envs.first()
    }
}

/// Operating system facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostFacts {
    /// `linux`, `windows`, `macos` (the OS the tool ran on).
    pub os: String,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// PRETTY_NAME from os-release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distro: Option<String>,
    /// Kernel release from /proc/sys/kernel/osrelease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_mib: Option<u64>,
    /// NVIDIA Jetson Linux (L4T): the first line of /etc/nv_tegra_release
    /// ("# R35 (release), REVISION: 4.1, GCID: ..., BOARD: t186ref, EABI: aarch64, ...").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l4t_release: Option<String>,
    /// The board, from /proc/device-tree/model ("NVIDIA Jetson AGX Orin Developer Kit").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board_model: Option<String>,
    /// The machine's name (/proc/sys/kernel/hostname); `--redact` replaces it in reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The CPU's model name (the first `model name` of /proc/cpuinfo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// The C library's version ("2.36"), from its file's name (`libc-2.31.so`) or the release
    /// string inside it ("... release version 2.36"); glibc only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<String>,
    /// `/dev/shm` as mounted (/proc/self/mounts); absent when it is not a mount of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_shm: Option<DevShm>,
    /// The host's C compiler: `cc` on PATH (else `gcc`), never a Python environment's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<HostTool>,
    /// `cmake` on PATH (extension builds need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmake: Option<HostTool>,
    /// `ninja` on PATH (torch's extension builder needs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ninja: Option<HostTool>,
}

/// The shared-memory file system: its size limit, where the mount says one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DevShm {
    /// The file system type (`tmpfs`, `shm`).
    pub fs_type: String,
    /// The `size=` of its mount options in MiB; `None` where the mount names none (a tmpfs
    /// then takes half of the memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mib: Option<u64>,
}

/// A build tool found on PATH.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostTool {
    /// Where PATH finds it, and the file that is after its symbolic links.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// Its version: the major from a versioned file name (`x86_64-linux-gnu-gcc-12`), else the
    /// first line of `--version` of a compiler outside every Python environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl HostFacts {
    /// A Jetson module: its root carries the L4T release file, or its device tree names a
    /// Jetson board. Its GPU is driven by JetPack, not by a discrete-GPU driver.
    pub fn is_jetson(&self) -> bool {
        self.l4t_release.is_some()
            || self
                .board_model
                .as_deref()
                .is_some_and(|m| m.contains("Jetson"))
    }
}

/// One try at reading a fact from one source, kept so the report can say where facts came from
/// and why a source said nothing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Attempt {
    /// What was asked: `nvml`, `libcuda`, `/proc/driver/nvidia/version`, `nvidia-smi`, ...
    pub source: String,
    pub outcome: Outcome,
    /// A human sentence: what was found, or why nothing was.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The source answered.
    Ok,
    /// The source does not exist here (no such file, library or program).
    Absent,
    /// The source exists but failed (error status, unreadable, garbage output).
    Failed,
    /// The source did not answer in time.
    TimedOut,
    /// Not tried (switched off, or not needed).
    Skipped,
    /// A program of the inspected root (`--root`): never run, its fact stays unknown.
    NotRunUnderRoot,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Ok => "ok",
            Outcome::Absent => "absent",
            Outcome::Failed => "failed",
            Outcome::TimedOut => "timed out",
            Outcome::Skipped => "skipped",
            Outcome::NotRunUnderRoot => "not run (a program of the inspected root)",
        })
    }
}

impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.source, self.outcome)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

impl Attempt {
    pub fn new(source: impl Into<String>, outcome: Outcome, detail: impl Into<String>) -> Self {
        Attempt {
            source: source.into(),
            outcome,
            detail: detail.into(),
        }
    }
}

/// A value with the source it was read from, so a finding can cite it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: String,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: impl Into<String>) -> Self {
        Sourced {
            value,
            source: source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_round_trips_through_json() {
        let mut snap = Snapshot::new("0.1.0", "/");
        snap.driver.version = Some(Sourced::new("580.159.04".into(), "nvml"));
        let json = serde_json::to_string(&snap).unwrap();
        let back: Snapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(snap, back);
        assert!(json.contains("\"schema_version\":3"));
    }

    #[test]
    fn old_snapshots_missing_sections_still_load() {
        let back: Snapshot =
            serde_json::from_str(r#"{"schema_version":1,"tool_version":"x","root":"/"}"#).unwrap();
        assert!(back.python_envs.is_empty());
        assert!(back.driver.gpus.is_empty());
    }
}

/// Why bytes are not a snapshot this cudoctor reads.
#[derive(Debug)]
pub enum LoadError {
    NotJson(serde_json::Error),
    /// A snapshot of a schema version this cudoctor cannot read (a newer one).
    Schema(u64),
    /// JSON without a `schema_version`: not a cudoctor snapshot.
    NoSchema,
    /// The right schema version, but fields of the wrong shape.
    Invalid(serde_json::Error),
}

/// Parses a snapshot, or a whole `check --format json` report (its `snapshot`), from untrusted
/// bytes: the one loader of `--snapshot`, `diff` and `fleet`.
pub fn from_json(bytes: &[u8]) -> Result<Snapshot, LoadError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(LoadError::NotJson)?;
    let value = match value {
        serde_json::Value::Object(mut map)
            if map.contains_key("findings") && map.contains_key("snapshot") =>
        {
            map.remove("snapshot").unwrap_or_default()
        }
        other => other,
    };
    let mut value = value;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => migrate::to_current(&mut value, v).ok_or(LoadError::Schema(v))?,
        None => return Err(LoadError::NoSchema),
    }
    serde_json::from_value(value).map_err(LoadError::Invalid)
}
