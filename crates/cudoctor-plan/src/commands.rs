//! Install commands for one build, as pip, uv and conda spell them.

use cudoctor_kb::{TorchRelease, TorchVersion};

use crate::model::Commands;

/// PyTorch's own wheel index; one sub-index per variant ("cu130", "cpu").
pub const PYTORCH_INDEX: &str = "https://download.pytorch.org/whl";

/// The last release PyTorch published to its own conda channel (pytorch/pytorch#138506:
/// "2.5 will be the last release of PyTorch that will be published to the pytorch channel").
const LAST_CONDA_SERIES: (u32, u32) = (2, 5);

fn series(release: &TorchRelease) -> Option<(u32, u32)> {
    let v: TorchVersion = release.version.parse().ok()?;
    Some((*v.parts.first()?, *v.parts.get(1)?))
}

/// The `pkg==version` pins of a build. torch carries the variant's local version ("+cu130") so
/// that the pin names exactly one wheel; the companions are pinned by release, which matches
/// their variant wheel on the variant's index.
fn pins(release: &TorchRelease, tag: &str, local_torch: bool) -> Vec<String> {
    let mut out = vec![if local_torch {
        format!("torch=={}+{tag}", release.version)
    } else {
        format!("torch=={}", release.version)
    }];
    if let Some(tv) = &release.torchvision {
        out.push(format!("torchvision=={tv}"));
    }
    if let Some(ta) = &release.torchaudio {
        out.push(format!("torchaudio=={ta}"));
    }
    out
}

/// The pins of a build from PyPI: torch without a local version, companions by release.
pub(crate) fn plain_pins(release: &TorchRelease) -> Vec<String> {
    pins(release, "", false)
}

/// Notes for companions the commands leave out.
fn companion_notes(release: &TorchRelease) -> Vec<String> {
    let mut notes = Vec::new();
    if release.torchvision.is_none() {
        notes.push(format!(
            "the torchvision release that pairs with torch {} is not in the knowledge base; it is left out of the commands",
            release.version
        ));
    }
    if release.torchaudio.is_none() {
        notes.push(match &release.torchaudio_absent {
            Some(why) => format!("no torchaudio for torch {}: {why}", release.version),
            None => format!(
                "the torchaudio release that pairs with torch {} is not in the knowledge base; it is left out of the commands",
                release.version
            ),
        });
    }
    notes
}

/// Commands that install `release` in variant `tag` ("cu124" or "cpu").
pub fn commands(release: &TorchRelease, tag: &str) -> Commands {
    let mut c = Commands {
        notes: companion_notes(release),
        ..Commands::default()
    };
    c.pip = Some(format!(
        "pip install {} --index-url {PYTORCH_INDEX}/{tag}",
        pins(release, tag, true).join(" ")
    ));
    c.uv = Some(format!(
        "uv pip install {} --torch-backend={tag}",
        pins(release, tag, false).join(" ")
    ));
    if release.pypi_default.as_deref() == Some(tag) {
        c.pip_pypi = Some(format!(
            "pip install {}",
            pins(release, tag, false).join(" ")
        ));
    }
    match conda(release, tag) {
        Ok(cmd) => c.conda = Some(cmd),
        Err(note) => c.notes.push(note),
    }
    c
}

/// PyTorch's conda command for a release, as its install pages wrote them, or why there is none.
fn conda(release: &TorchRelease, tag: &str) -> Result<String, String> {
    let Some(s) = series(release) else {
        return Err(format!(
            "torch {} is not a release version",
            release.version
        ));
    };
    if s > LAST_CONDA_SERIES {
        return Err(
            "no conda command: PyTorch stopped publishing to its conda channel after 2.5 (pytorch/pytorch#138506); conda-forge builds its own `pytorch` packages, whose versions this knowledge base does not track — inside a conda env, use the pip command"
                .to_string(),
        );
    }
    let mut parts = vec![format!("conda install pytorch=={}", release.version)];
    if let Some(tv) = &release.torchvision {
        parts.push(format!("torchvision=={tv}"));
    }
    if let Some(ta) = &release.torchaudio {
        parts.push(format!("torchaudio=={ta}"));
    }
    if tag == "cpu" {
        parts.push("cpuonly -c pytorch".into());
        return Ok(parts.join(" "));
    }
    let cuda = cudoctor_kb::CudaVersion::from_tag(tag)
        .map_err(|e| format!("no conda command for variant {tag}: {e}"))?;
    if s >= (1, 13) {
        // From 1.13 the channel pairs torch with the `pytorch-cuda` metapackage from -c nvidia.
        parts.push(format!("pytorch-cuda={cuda} -c pytorch -c nvidia"));
    } else if cuda >= cudoctor_kb::CudaVersion::new(11, 6) {
        parts.push(format!("cudatoolkit={cuda} -c pytorch -c conda-forge"));
    } else {
        parts.push(format!("cudatoolkit={cuda} -c pytorch"));
    }
    Ok(parts.join(" "))
}

/// A parsed `pip install` command: its pins and its index URL (for checks against the kb).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedPip {
    /// (package, version) in order.
    pub pins: Vec<(String, String)>,
    pub index_url: Option<String>,
}

/// Reads back a command produced by [`commands`] (used by tests and by callers that check a
/// command before printing it). None when it is not a `pip install` command.
pub fn parse_pip(cmd: &str) -> Option<ParsedPip> {
    let rest = cmd.strip_prefix("pip install ")?;
    let mut words = rest.split_whitespace();
    let mut pins = Vec::new();
    let mut index_url = None;
    while let Some(w) = words.next() {
        if w == "--index-url" {
            index_url = Some(words.next()?.to_string());
        } else if let Some((pkg, ver)) = w.split_once("==") {
            pins.push((pkg.to_string(), ver.to_string()));
        } else {
            return None;
        }
    }
    Some(ParsedPip { pins, index_url })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_kb::Kb;

    fn release(v: &str) -> &'static TorchRelease {
        Kb::embedded().torch(v).unwrap()
    }

    #[test]
    fn pip_and_uv_commands_pin_the_variant() {
        let c = commands(release("2.5.1"), "cu124");
        assert_eq!(
            c.pip.as_deref(),
            Some("pip install torch==2.5.1+cu124 torchvision==0.20.1 torchaudio==2.5.1 --index-url https://download.pytorch.org/whl/cu124")
        );
        assert_eq!(
            c.uv.as_deref(),
            Some("uv pip install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 --torch-backend=cu124")
        );
        assert_eq!(
            c.pip_pypi.as_deref(),
            Some("pip install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1")
        );
        assert_eq!(
            c.conda.as_deref(),
            Some("conda install pytorch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 pytorch-cuda=12.4 -c pytorch -c nvidia")
        );
        // Not the PyPI default: no plain-PyPI command.
        assert!(commands(release("2.5.1"), "cu118").pip_pypi.is_none());
    }

    #[test]
    fn conda_stops_after_2_5_and_old_releases_use_cudatoolkit() {
        let c = commands(release("2.6.0"), "cu126");
        assert!(c.conda.is_none());
        assert!(c.notes.iter().any(|n| n.contains("138506")));
        let c = commands(release("1.12.1"), "cu116");
        assert_eq!(
            c.conda.as_deref(),
            Some("conda install pytorch==1.12.1 torchvision==0.13.1 torchaudio==0.12.1 cudatoolkit=11.6 -c pytorch -c conda-forge")
        );
        let c = commands(release("1.12.1"), "cpu");
        assert!(c.conda.unwrap().ends_with("cpuonly -c pytorch"));
    }

    #[test]
    fn parse_pip_reads_back() {
        let c = commands(release("2.5.1"), "cu124");
        let p = parse_pip(c.pip.as_deref().unwrap()).unwrap();
        assert_eq!(
            p.index_url.as_deref(),
            Some("https://download.pytorch.org/whl/cu124")
        );
        assert_eq!(p.pins[0], ("torch".into(), "2.5.1+cu124".into()));
        assert!(parse_pip("uv pip install torch").is_none());
        assert!(parse_pip("pip install torch --index-url").is_none());
        assert!(parse_pip("pip install -U torch").is_none());
    }
}
