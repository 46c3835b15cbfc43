//! The platform a build is for: Linux x86_64 (the torch table's own), Linux aarch64 (Grace
//! Hopper / Grace Blackwell servers, SBSA), Windows x86_64, or a Jetson module (JetPack).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Platform {
    #[default]
    #[serde(rename = "linux-x86_64")]
    LinuxX86_64,
    #[serde(rename = "linux-aarch64")]
    LinuxAarch64,
    #[serde(rename = "windows")]
    Windows,
    #[serde(rename = "jetson")]
    Jetson,
}

impl Platform {
    pub const ALL: [Platform; 4] = [
        Platform::LinuxX86_64,
        Platform::LinuxAarch64,
        Platform::Windows,
        Platform::Jetson,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "linux-x86_64",
            Platform::LinuxAarch64 => "linux-aarch64",
            Platform::Windows => "windows",
            Platform::Jetson => "jetson",
        }
    }

    /// The platform of a host as a snapshot records it (`os` "linux"/"windows", `arch`
    /// "x86_64"/"aarch64", and whether its root is a Jetson's: the L4T release file or a
    /// Jetson board in its device tree). A Jetson root is Jetson whatever the inspecting
    /// tool's own architecture (`--root` of a Jetson's file system).
    pub fn of_host(os: &str, arch: &str, jetson: bool) -> Platform {
        if jetson && !os.eq_ignore_ascii_case("windows") {
            Platform::Jetson
        } else if os.eq_ignore_ascii_case("windows") {
            Platform::Windows
        } else if arch == "aarch64" || arch == "arm64" {
            Platform::LinuxAarch64
        } else {
            Platform::LinuxX86_64
        }
    }

    /// How people say it in a sentence.
    pub fn describe(&self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "Linux x86_64",
            Platform::LinuxAarch64 => "Linux aarch64",
            Platform::Windows => "Windows",
            Platform::Jetson => "Jetson (JetPack)",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown platform name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown platform {0:?}: use linux-x86_64, linux-aarch64, windows or jetson")]
pub struct UnknownPlatform(pub String);

impl FromStr for Platform {
    type Err = UnknownPlatform;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "linux-x86_64" | "linux_x86_64" | "x86_64" | "linux" | "amd64" => Platform::LinuxX86_64,
            "linux-aarch64" | "linux_aarch64" | "aarch64" | "arm64" | "sbsa" | "linux-sbsa" => {
                Platform::LinuxAarch64
            }
            "windows" | "win" | "win_amd64" | "windows-x86_64" => Platform::Windows,
            "jetson" | "jetpack" | "l4t" => Platform::Jetson,
            _ => return Err(UnknownPlatform(s.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_read() {
        for p in Platform::ALL {
            assert_eq!(p.as_str().parse::<Platform>().unwrap(), p);
        }
        assert_eq!("ARM64".parse::<Platform>().unwrap(), Platform::LinuxAarch64);
        assert_eq!("win".parse::<Platform>().unwrap(), Platform::Windows);
        assert!("macos".parse::<Platform>().is_err());
    }
}
