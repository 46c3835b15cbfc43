//! Building the torch table from its rows, and the consistency checks every table must pass
//! (the embedded data in tests, a user's `--kb DIR` data at load time).

use std::collections::{BTreeMap, HashSet};

use crate::data::{ArchListRow, TorchReleaseRow};
use crate::error::KbError;
use crate::torch::{ArchEntry, TorchRelease, TorchVariant, TorchVersion};
use crate::Kb;
use cudoctor_types::version::{CudaVersion, DriverVersion};

/// Turns release rows into releases, attaching arch lists (an exact-release row wins over a
/// series row). Returns the releases sorted oldest first and the arch-list rows that matched
/// nothing (reported as inconsistencies).
pub(crate) fn assemble_torch(
    rows: Vec<TorchReleaseRow>,
    arch_lists: &[ArchListRow],
) -> Result<(Vec<TorchRelease>, Vec<String>), KbError> {
    let mut used = vec![false; arch_lists.len()];
    let mut releases = Vec::with_capacity(rows.len());
    for row in rows {
        let parsed: TorchVersion = row.version.parse().map_err(|source| KbError::Version {
            file: crate::data::TORCH.to_string(),
            row: format!("release {}", row.version),
            source,
        })?;
        let series = parsed.series();
        let mut variants = Vec::with_capacity(row.variants.len());
        for tag in &row.variants {
            let cuda = CudaVersion::from_tag(tag).map_err(|source| KbError::Version {
                file: crate::data::TORCH.to_string(),
                row: format!("release {} variant {tag}", row.version),
                source,
            })?;
            let pick = |exact: bool| {
                arch_lists.iter().position(|a| {
                    a.variant == *tag
                        && a.torch.iter().any(|t| {
                            if exact {
                                *t == row.version
                            } else {
                                *t == series
                            }
                        })
                })
            };
            let found = pick(true).or_else(|| pick(false));
            let arch = found.and_then(|i| {
                if let Some(flag) = used.get_mut(i) {
                    *flag = true;
                }
                arch_lists.get(i)
            });
            variants.push(TorchVariant {
                tag: tag.clone(),
                cuda,
                arch_list: arch.map(|a| a.archs.clone()),
                arch_list_basis: arch.map(|a| a.basis),
                arch_list_source: arch.map(|a| a.source.clone()),
            });
        }
        variants.sort_by_key(|v| v.cuda);
        releases.push((
            parsed,
            TorchRelease {
                version: row.version,
                variants,
                variants_incomplete: row.variants_incomplete,
                pypi_default: row.pypi_default,
                torchvision: row.torchvision,
                torchaudio: row.torchaudio,
                torchaudio_absent: row.torchaudio_absent,
                python: row.python,
                torchvision_python: row.torchvision_python,
                torchaudio_python: row.torchaudio_python,
                notes: row.notes,
                sources: row.sources,
            },
        ));
    }
    releases.sort_by(|a, b| a.0.cmp(&b.0));
    let dangling = arch_lists
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(a, _)| {
            format!(
                "arch list for torch {:?} {} matches no release variant",
                a.torch, a.variant
            )
        })
        .collect();
    Ok((releases.into_iter().map(|(_, r)| r).collect(), dangling))
}

/// Every inconsistency found, as sentences; empty when the tables are sound.
pub(crate) fn check(kb: &Kb) -> Vec<String> {
    let mut p = kb.dangling_arch_lists.clone();
    toolkits(kb, &mut p);
    branches(kb, &mut p);
    minor_compat(kb, &mut p);
    torch(kb, &mut p);
    gpus(kb, &mut p);
    nvcc(kb, &mut p);
    platforms(kb, &mut p);
    jax(kb, &mut p);
    xids(kb, &mut p);
    p
}

/// Every Xid row has a source, a meaning and an action text, once per Xid; its causes are the
/// columns of NVIDIA's table and a DCGM code is one of DCGM's names.
fn xids(kb: &Kb, p: &mut Vec<String>) {
    const CAUSES: [&str; 7] = [
        "hardware",
        "driver",
        "application",
        "bus",
        "thermal",
        "memory_corruption",
        "fb_corruption",
    ];
    let mut seen = std::collections::BTreeSet::new();
    for x in &kb.xids {
        if !seen.insert(x.xid) {
            p.push(format!("xid.toml: Xid {} appears twice", x.xid));
        }
        if x.sources.is_empty() || x.sources.iter().any(|s| !s.starts_with("https://")) {
            p.push(format!("xid.toml: Xid {} lacks a source address", x.xid));
        }
        if x.meaning.trim().is_empty()
            || x.action_text.trim().is_empty()
            || x.name.trim().is_empty()
        {
            p.push(format!(
                "xid.toml: Xid {} lacks its name, meaning or action",
                x.xid
            ));
        }
        if let Some(c) = x.causes.iter().find(|c| !CAUSES.contains(&c.as_str())) {
            p.push(format!(
                "xid.toml: Xid {} names an unknown cause {c}",
                x.xid
            ));
        }
        if x.dcgm_fr
            .as_ref()
            .is_some_and(|d| !d.starts_with("DCGM_FR_"))
        {
            p.push(format!("xid.toml: Xid {} names no DCGM_FR_ code", x.xid));
        }
    }
}

/// Every plugin release is a jax release of the same Python (`jax[cudaNN]==V` installs the
/// plugin V), and every row has a source.
fn jax(kb: &Kb, p: &mut Vec<String>) {
    for r in &kb.jax_releases {
        if r.source.trim().is_empty() {
            p.push(format!(
                "jax.toml: jax row for Python {} has no source",
                r.python
            ));
        }
    }
    for pl in &kb.jax_plugins {
        if pl.source.trim().is_empty() || pl.name != format!("jax-cuda{}-plugin", pl.cuda_major) {
            p.push(format!(
                "jax.toml: plugin row {} (CUDA {}) for Python {} lacks a source or its name is not its major's",
                pl.name, pl.cuda_major, pl.python
            ));
        }
        let Some(jax) = kb.jax_releases.iter().find(|r| r.python == pl.python) else {
            p.push(format!(
                "jax.toml: {} for Python {} without a jax row",
                pl.name, pl.python
            ));
            continue;
        };
        for v in &pl.releases {
            if !jax.releases.contains(v) {
                p.push(format!(
                    "jax.toml: {} {v} for Python {} is no jax release listed for it",
                    pl.name, pl.python
                ));
            }
        }
    }
}

fn platforms(kb: &Kb, p: &mut Vec<String>) {
    for b in &kb.pypi_builds {
        if blank(&b.source) {
            p.push(format!(
                "PyPI build {} {:?}: no source",
                b.platform, b.torch
            ));
        }
        if b.platform == crate::Platform::LinuxX86_64 {
            p.push("PyPI builds of linux-x86_64 belong in torch.toml's pypi_default".into());
        }
        for t in &b.torch {
            match kb.torch_releases().iter().find(|r| &r.version == t) {
                None => p.push(format!(
                    "PyPI build {}: torch {t} is not in torch.toml",
                    b.platform
                )),
                Some(r) if b.build != "cpu" && r.variant(&b.build).is_none() => p.push(format!(
                    "PyPI build {}: torch {t} has no {} variant in torch.toml",
                    b.platform, b.build
                )),
                Some(_) => {}
            }
        }
        let others = kb
            .pypi_builds
            .iter()
            .filter(|o| o.platform == b.platform && !std::ptr::eq(*o, b));
        for o in others {
            if let Some(t) = o.torch.iter().find(|t| b.torch.contains(t)) {
                p.push(format!("PyPI build {}: torch {t} listed twice", b.platform));
            }
        }
    }
    for i in &kb.platform_indexes {
        if blank(&i.source) {
            p.push(format!("index row of {}: no source", i.platform));
        }
        for a in &i.absent {
            let found = a.split_once(' ').and_then(|(t, tag)| {
                kb.torch_releases()
                    .iter()
                    .find(|r| r.version == t)?
                    .variant(tag)
            });
            if found.is_none() {
                p.push(format!(
                    "index row of {}: absent {a:?} names no release/variant in torch.toml",
                    i.platform
                ));
            }
        }
    }
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

fn toolkits(kb: &Kb, p: &mut Vec<String>) {
    if kb.toolkits.is_empty() {
        p.push("toolkit table is empty".into());
    }
    for t in &kb.toolkits {
        if blank(&t.source) {
            p.push(format!("toolkit {} {}: no source", t.version, t.release));
        }
    }
    // GA minimums increase strictly with the toolkit version, on Linux and on Windows.
    let mut versions: Vec<CudaVersion> = kb.toolkits.iter().map(|t| t.version).collect();
    versions.dedup();
    let mut prev: Option<(CudaVersion, DriverVersion, Option<DriverVersion>)> = None;
    for v in versions {
        let Some(ga) = kb.toolkit_ga(v) else {
            p.push(format!("toolkit {v}: only release candidates, no GA row"));
            continue;
        };
        if let Some((pv, plin, pwin)) = &prev {
            if ga.linux_min_driver <= *plin {
                p.push(format!(
                    "toolkit {v} GA needs Linux driver {} which is not above {pv}'s {plin}",
                    ga.linux_min_driver
                ));
            }
            if let (Some(w), Some(pw)) = (&ga.windows_min_driver, pwin) {
                if w < pw {
                    p.push(format!(
                        "toolkit {v} GA needs Windows driver {w}, below {pv}'s {pw}"
                    ));
                }
            }
        }
        prev = Some((
            v,
            ga.linux_min_driver.clone(),
            ga.windows_min_driver.clone(),
        ));
        // Updates never need less than the GA.
        for t in kb.toolkits.iter().filter(|t| t.version == v) {
            if !t.is_release_candidate() && t.linux_min_driver < ga.linux_min_driver {
                p.push(format!("toolkit {v} {} needs less than its GA", t.release));
            }
        }
    }
}

fn branches(kb: &Kb, p: &mut Vec<String>) {
    let mut seen = HashSet::new();
    for b in &kb.branches {
        if !seen.insert(b.branch) {
            p.push(format!("driver branch R{} listed twice", b.branch));
        }
        if blank(&b.source) {
            p.push(format!("driver branch R{}: no source", b.branch));
        }
        let Some(max) = b.max_cuda else { continue };
        // The branch's ceiling is the toolkit whose minimum driver lies in this branch, and no
        // newer toolkit's minimum lies in this branch or below.
        match kb.toolkit_min_driver(max) {
            Some(min) if min.branch() == b.branch => {}
            Some(min) => p.push(format!(
                "driver branch R{} says CUDA {max}, but {max} needs driver {min}",
                b.branch
            )),
            None => p.push(format!(
                "driver branch R{} says CUDA {max}, which the toolkit table lacks",
                b.branch
            )),
        }
        for t in &kb.toolkits {
            if t.version > max
                && !t.is_release_candidate()
                && t.linux_min_driver.branch() <= b.branch
            {
                p.push(format!(
                    "driver branch R{} says CUDA {max}, but toolkit {} needs only {}",
                    b.branch, t.version, t.linux_min_driver
                ));
            }
        }
    }
    // Ceilings never go down as branches go up.
    let known: Vec<_> = kb
        .branches
        .iter()
        .filter_map(|b| b.max_cuda.map(|m| (b.branch, m)))
        .collect();
    for pair in known.windows(2) {
        if let [(b1, m1), (b2, m2)] = pair {
            if m2 < m1 {
                p.push(format!(
                    "R{b2} has a lower CUDA ceiling ({m2}) than R{b1} ({m1})"
                ));
            }
        }
    }
}

fn minor_compat(kb: &Kb, p: &mut Vec<String>) {
    for m in &kb.minor_compat {
        if blank(&m.source) {
            p.push(format!("minor-compat {}.x: no source", m.cuda_major));
        }
        // The floor lies in the branch of the major's first toolkit (11.0 -> R450 ...).
        match kb.toolkit_min_driver(CudaVersion::new(m.cuda_major, 0)) {
            Some(first) if first.branch() == m.linux_floor.branch() => {}
            Some(first) => p.push(format!(
                "minor-compat floor {} for {}.x is not in the branch of {}.0's minimum {first}",
                m.linux_floor, m.cuda_major, m.cuda_major
            )),
            None => p.push(format!(
                "minor-compat {}.x: the toolkit table has no {}.0",
                m.cuda_major, m.cuda_major
            )),
        }
    }
}

fn torch(kb: &Kb, p: &mut Vec<String>) {
    let newest_toolkit = kb.newest_toolkit();
    let mut seen = HashSet::new();
    for r in &kb.torch {
        let v = &r.version;
        if !seen.insert(v.clone()) {
            p.push(format!("torch {v} listed twice"));
        }
        if r.sources.is_empty() || r.sources.iter().any(|s| blank(s)) {
            p.push(format!("torch {v}: empty source"));
        }
        if r.variants.is_empty() {
            p.push(format!("torch {v}: no CUDA variant"));
        }
        let mut tags = HashSet::new();
        for var in &r.variants {
            if !tags.insert(var.tag.as_str()) {
                p.push(format!("torch {v}: variant {} twice", var.tag));
            }
            // The variant's CUDA is a known toolkit, or one newer than the table whose major
            // has a minor-compat floor (so driver checks still have a rule).
            let known = kb.toolkit_min_driver(var.cuda).is_some();
            let newer_with_floor = newest_toolkit.is_some_and(|n| var.cuda > n)
                && kb.minor_compat_floor(var.cuda.major).is_some();
            if !known && !newer_with_floor {
                p.push(format!(
                    "torch {v} {}: CUDA {} is not a known toolkit",
                    var.tag, var.cuda
                ));
            }
            if let Some(list) = &var.arch_list {
                arch_list(&format!("torch {v} {}", var.tag), list, p);
                if var.arch_list_source.as_deref().is_none_or(blank) {
                    p.push(format!("torch {v} {}: arch list without source", var.tag));
                }
            }
        }
        if let Some(d) = &r.pypi_default {
            if r.variant(d).is_none() {
                p.push(format!(
                    "torch {v}: PyPI default {d} is not one of its variants"
                ));
            }
        }
        for (what, val) in [
            ("torchvision", &r.torchvision),
            ("torchaudio", &r.torchaudio),
        ] {
            if let Some(val) = val {
                if val.parse::<TorchVersion>().is_err() {
                    p.push(format!("torch {v}: {what} {val:?} is not a version"));
                }
            }
        }
        if r.torchaudio.is_some() && r.torchaudio_absent.is_some() {
            p.push(format!("torch {v}: torchaudio both given and said absent"));
        }
        if r.python.is_empty() {
            p.push(format!("torch {v}: no Python versions"));
        }
        for py in r
            .python
            .iter()
            .chain(&r.torchvision_python)
            .chain(&r.torchaudio_python)
        {
            let body = py.strip_suffix('t').unwrap_or(py);
            let ok = body.split_once('.').is_some_and(|(a, b)| {
                a == "3" && !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit())
            });
            if !ok {
                p.push(format!("torch {v}: Python {py:?} is not 3.N or 3.Nt"));
            }
        }
    }
    // Companion versions increase with torch.
    let mut last_vision: Option<(String, TorchVersion)> = None;
    for r in &kb.torch {
        if let Some(tv) = r
            .torchvision
            .as_ref()
            .and_then(|t| t.parse::<TorchVersion>().ok())
        {
            if let Some((prev_torch, prev)) = &last_vision {
                if tv <= *prev {
                    p.push(format!(
                        "torchvision of torch {} is not above that of torch {prev_torch}",
                        r.version
                    ));
                }
            }
            last_vision = Some((r.version.clone(), tv));
        }
    }
}

/// An arch list parses, is sorted ascending without duplicates, and only its last entry
/// carries +PTX (PyTorch embeds PTX for the newest architecture only).
fn arch_list(what: &str, list: &[String], p: &mut Vec<String>) {
    let parsed: Result<Vec<ArchEntry>, _> = list.iter().map(|a| a.parse()).collect();
    let Ok(parsed) = parsed else {
        p.push(format!("{what}: arch list {list:?} does not parse"));
        return;
    };
    if parsed.is_empty() {
        p.push(format!("{what}: empty arch list"));
    }
    if !parsed
        .windows(2)
        .all(|w| matches!(w, [a, b] if a.cc < b.cc))
    {
        p.push(format!("{what}: arch list {list:?} not strictly ascending"));
    }
    let n = parsed.len();
    if parsed.iter().enumerate().any(|(i, e)| e.ptx && i + 1 != n) {
        p.push(format!("{what}: +PTX on an entry other than the last"));
    }
}

fn gpus(kb: &Kb, p: &mut Vec<String>) {
    let mut names: BTreeMap<Vec<String>, &str> = BTreeMap::new();
    for g in &kb.gpus {
        if blank(&g.source) {
            p.push(format!("GPU {:?}: no source", g.names));
        }
        if g.names.is_empty() {
            p.push(format!("GPU row with cc {} has no names", g.cc));
        }
        if (g.first_branch.is_some() || g.last_branch.is_some())
            && g.branch_source.as_deref().is_none_or(blank)
        {
            p.push(format!(
                "GPU {:?}: driver branches without a source",
                g.names
            ));
        }
        if let (Some(f), Some(l)) = (g.first_branch, g.last_branch) {
            if f > l {
                p.push(format!("GPU {:?}: first branch above last", g.names));
            }
        }
        if g.jetson && (g.first_branch.is_some() || g.last_branch.is_some()) {
            p.push(format!(
                "GPU {:?}: a Jetson module's driver comes with JetPack, not a branch",
                g.names
            ));
        }
        for n in &g.names {
            let words = crate::gpu::name_words(n);
            if words.is_empty() {
                p.push(format!("GPU name {n:?} has no words"));
            }
            if let Some(prev) = names.insert(words, n) {
                p.push(format!("GPU names {prev:?} and {n:?} are the same product"));
            }
            // Every product name must find its own row.
            match kb.gpu(n) {
                Some(found) if found.cc == g.cc => {}
                _ => p.push(format!("GPU name {n:?} does not resolve to its own row")),
            }
        }
    }
}

fn nvcc(kb: &Kb, p: &mut Vec<String>) {
    for r in &kb.nvcc {
        if blank(&r.source) {
            p.push(format!("nvcc range {}..{}: no source", r.from, r.to));
        }
        if r.from > r.to {
            p.push(format!("nvcc range {}..{} is reversed", r.from, r.to));
        }
        if let (Some(l), Some(h)) = (r.lowest, r.highest) {
            if l > h {
                p.push(format!(
                    "nvcc range {}..{}: lowest above highest",
                    r.from, r.to
                ));
            }
        }
    }
    for w in kb.nvcc.windows(2) {
        if let [a, b] = w {
            if b.from <= a.to {
                p.push(format!(
                    "nvcc ranges {}..{} and {}..{} overlap",
                    a.from, a.to, b.from, b.to
                ));
            }
        }
    }
}
