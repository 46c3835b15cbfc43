use serde::{Deserialize, Serialize};

use crate::Attempt;

/// Linux security modules that can stand between a process and the GPU: their modes, this
/// process's own confinement, and denials in the kernel log that name NVIDIA files.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SecurityFacts {
    /// Absent when selinuxfs is not mounted (SELinux off or not built in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selinux: Option<SelinuxFacts>,
    /// Absent when AppArmor's securityfs files are not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apparmor: Option<ApparmorFacts>,
    /// The label of the inspecting process itself (what a program started here inherits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<Confinement>,
    /// Denials naming NVIDIA devices or driver files, oldest first (bounded).
    #[serde(default)]
    pub denials: Vec<SecurityDenial>,
    /// Where the kernel log was read from, or why it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<Attempt>,
    /// auditd's log (where denials go instead of the kernel log while auditd runs): read, or
    /// why not (absent, or root's only: said, not a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_log: Option<Attempt>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SelinuxFacts {
    /// `/sys/fs/selinux/enforce` reads 1.
    pub enforcing: bool,
    /// The file the mode was read from.
    pub source: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ApparmorFacts {
    /// `/sys/kernel/security/apparmor/profiles` could be read (root only on most systems).
    pub profiles_readable: bool,
    /// Profiles loaded in enforce mode, and in complain mode.
    #[serde(default)]
    pub enforce: u32,
    #[serde(default)]
    pub complain: u32,
    /// The source of the counts.
    pub source: String,
}

/// A process label as the kernel reports it in `/proc/self/attr/...`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Confinement {
    /// Raw label, NULs and the newline removed: `unconfined`, `docker-default (enforce)`,
    /// `system_u:system_r:container_t:s0:c1,c2`.
    pub label: String,
    pub source: String,
}

impl Confinement {
    /// An AppArmor profile in enforce mode ("docker-default (enforce)" -> "docker-default").
    pub fn apparmor_enforced_profile(&self) -> Option<&str> {
        self.label.strip_suffix(" (enforce)")
    }

    /// The SELinux type of a `user:role:type:level` label ("container_t").
    pub fn selinux_type(&self) -> Option<&str> {
        let mut parts = self.label.split(':');
        let (_, _, t) = (parts.next()?, parts.next()?, parts.next()?);
        Some(t)
    }

    /// True for labels that restrict nothing: AppArmor's `unconfined`, SELinux's
    /// `unconfined_t`/`spc_t`/`kernel_t` and initial `kernel` labels.
    pub fn is_unconfined(&self) -> bool {
        let l = self.label.as_str();
        if l == "unconfined" || l == "kernel" || l.ends_with(" (unconfined)") {
            return true;
        }
        matches!(
            self.selinux_type(),
            Some("unconfined_t" | "spc_t" | "kernel_t" | "unconfined_service_t")
        )
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SecurityModule {
    #[default]
    Selinux,
    Apparmor,
}

/// Where a denial was read.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DenialSource {
    /// The kernel log (`/dev/kmsg`, the journal's kernel records, dmesg).
    #[default]
    KernelLog,
    /// auditd's log (`/var/log/audit/audit.log`).
    AuditLog,
}

impl DenialSource {
    pub fn is_kernel_log(&self) -> bool {
        *self == DenialSource::KernelLog
    }
}

/// One denial from the kernel log or auditd's log.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SecurityDenial {
    pub module: SecurityModule,
    /// The object denied: `path=`/`name=` of the record (`/dev/nvidia0`, `nvidiactl`).
    pub object: String,
    /// `comm=` of the denied process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The SELinux source context (`scontext=`) or the AppArmor profile (`profile=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// What was asked: `{ read write }` for SELinux, `operation=`/`denied_mask=` for AppArmor.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub access: String,
    /// SELinux `permissive=1`: logged but allowed.
    #[serde(default)]
    pub permissive: bool,
    /// The log line as read (cut to a few hundred characters).
    pub line: String,
    /// The log it was read from.
    #[serde(default, skip_serializing_if = "DenialSource::is_kernel_log")]
    pub source: DenialSource,
}
