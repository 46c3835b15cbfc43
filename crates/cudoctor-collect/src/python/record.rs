//! torch's and the nvidia-* wheels' files against their `RECORD`s (the wheel spec's list of
//! `path,sha256=<urlsafe base64>,size`): every file's size, the SHA-256 of CUDA libraries within
//! a byte budget (all of them with the full check), and paths two distributions both list.
//!
//! The default budget keeps `check` fast: sizes are one `stat` per file, and no multi-GB library
//! is read unless the full check was asked for.

use std::collections::BTreeMap;
use std::io::Read;

use cudoctor_snapshot::{DamagedFile, FileProblem, PathOwner, PythonEnv, SharedPath, WheelCheck};
use sha2::{Digest, Sha256};

use super::site::{dist_name_version, normalise_name};
use crate::host::Host;

/// Bytes hashed by default per environment: the small CUDA libraries, never a multi-GB one.
pub const DEFAULT_HASH_BUDGET: u64 = 16 << 20;

/// How much hashing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hashing {
    /// Hash CUDA libraries until this many bytes have been read.
    Budget(u64),
    /// Hash every file that has a recorded hash.
    Full,
}

impl Default for Hashing {
    fn default() -> Self {
        Hashing::Budget(DEFAULT_HASH_BUDGET)
    }
}

/// The distributions whose files are checked.
fn checked(name: &str) -> bool {
    name == "torch" || name.starts_with("nvidia-")
}

/// One RECORD line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordEntry {
    pub path: String,
    /// The `sha256=` digest as written (urlsafe base64 without padding); `None` for other
    /// algorithms and for unhashed entries (RECORD itself, `.pyc` files).
    pub sha256: Option<String>,
    pub size: Option<u64>,
}

/// Parses RECORD (CSV: fields may be double-quoted, `""` inside quotes is a quote).
pub fn parse_record(text: &str) -> Vec<RecordEntry> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|line| {
            let fields = csv_fields(line);
            let path = fields.first()?.clone();
            let sha256 = fields
                .get(1)
                .and_then(|h| h.strip_prefix("sha256="))
                .map(str::to_string);
            let size = fields.get(2).and_then(|s| s.trim().parse().ok());
            Some(RecordEntry { path, sha256, size })
        })
        .collect()
}

fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// A CUDA library: a shared object of an nvidia wheel or of torch/lib.
fn is_cuda_library(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.contains(".so") && (rel.starts_with("nvidia/") || rel.starts_with("torch/lib/"))
}

/// RECORD's digest spelling: urlsafe base64 without padding.
pub fn record_digest(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn sha256_of(path: &std::path::Path) -> std::io::Result<(String, u64)> {
    let mut file = cudoctor_types::regular_file::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((record_digest(&hasher.finalize()), total))
}

struct Owner {
    package: String,
    version: String,
    sha256: Option<String>,
    size: Option<u64>,
}

/// Checks the environment's torch and nvidia-* distributions; `None` when it has none.
pub fn check(host: &Host, env: &PythonEnv, hashing: Hashing) -> Option<WheelCheck> {
    let mut report = WheelCheck {
        full: hashing == Hashing::Full,
        hash_budget_bytes: match hashing {
            Hashing::Budget(b) => Some(b),
            Hashing::Full => None,
        },
        ..Default::default()
    };
    let mut budget = match hashing {
        Hashing::Budget(b) => b,
        Hashing::Full => u64::MAX,
    };
    for sp in &env.site_packages {
        // Relative path -> the distributions that list it, in directory order.
        let mut by_path: BTreeMap<String, Vec<Owner>> = BTreeMap::new();
        for entry in host.list_dir(sp) {
            if !entry.ends_with(".dist-info") {
                continue;
            }
            let Some((name, Some(version))) = dist_name_version(&entry) else {
                continue;
            };
            let name = normalise_name(&name);
            if !checked(&name) || env.package(&name).is_none_or(|p| &p.location != sp) {
                continue;
            }
            let record = format!("{sp}/{entry}/RECORD");
            let text = match host.read_text(&record) {
                Ok(t) => t,
                Err(e) => {
                    report.errors.push(format!("{record}: {e}"));
                    continue;
                }
            };
            report.packages.push(format!("{name} {version}"));
            for e in parse_record(&text) {
                if e.size.is_none() && e.sha256.is_none() {
                    continue;
                }
                by_path.entry(e.path).or_default().push(Owner {
                    package: name.clone(),
                    version: version.clone(),
                    sha256: e.sha256,
                    size: e.size,
                });
            }
        }
        let entries: Vec<(String, Vec<Owner>)> = by_path.into_iter().collect();
        let sizes = stat_all(host, sp, &entries);
        // Which files to hash is decided in path order against the budget (so the choice does
        // not depend on timing); the hashing itself then runs on several threads.
        let mut to_hash: Vec<usize> = Vec::new();
        for (i, ((rel, owners), actual)) in entries.iter().zip(&sizes).enumerate() {
            let want_hash = hashing == Hashing::Full || is_cuda_library(rel) || owners.len() > 1;
            let any_size_fits = owners
                .iter()
                .any(|o| actual.is_some() && o.size.is_none_or(|s| Some(s) == *actual));
            if want_hash && any_size_fits && owners.iter().any(|o| o.sha256.is_some()) {
                let size = actual.unwrap_or(0);
                if size <= budget {
                    budget -= size;
                    to_hash.push(i);
                } else {
                    report.hashes_skipped += 1;
                }
            }
        }
        let mut digests = hash_all(host, sp, &entries, &to_hash);
        for (i, ((rel, owners), actual)) in entries.into_iter().zip(sizes).enumerate() {
            // Only the files reported need their machine path (12k entries for torch alone).
            let machine = || crate::host::normalise(&format!("{sp}/{rel}"));
            report.files_checked += 1;
            let size_matches: Vec<bool> = owners
                .iter()
                .map(|o| actual.is_some() && o.size.is_none_or(|s| Some(s) == actual))
                .collect();
            let digest = digests.remove(&i).map(|(d, n)| {
                report.files_hashed += 1;
                report.bytes_hashed += n;
                d
            });
            let fitting = size_matches.iter().filter(|m| **m).count();
            let matches: Vec<Option<bool>> = owners
                .iter()
                .zip(&size_matches)
                .map(|(o, size_ok)| {
                    if !size_ok {
                        return Some(false);
                    }
                    match (&digest, &o.sha256) {
                        (Some(d), Some(h)) => Some(d == h),
                        // Hash not read: the size decides when no other owner's size fits.
                        _ if fitting == 1 => Some(true),
                        _ => None,
                    }
                })
                .collect();
            let same_content = owners
                .windows(2)
                .all(|w| w[0].sha256.is_some() && w[0].sha256 == w[1].sha256);
            if owners.len() > 1 && !same_content {
                report.shared_paths.push(SharedPath {
                    path: machine(),
                    owners: owners
                        .iter()
                        .zip(&matches)
                        .map(|(o, m)| PathOwner {
                            package: o.package.clone(),
                            version: o.version.clone(),
                            matches: *m,
                        })
                        .collect(),
                });
                // Overwritten by a co-owner is reported as sharing, not damage; damage only
                // when the file is nobody's.
                if matches.iter().any(|m| *m != Some(false)) {
                    continue;
                }
            }
            for (o, m) in owners.iter().zip(&matches) {
                if *m != Some(false) {
                    continue;
                }
                let problem = match actual {
                    None => FileProblem::Missing,
                    Some(a) if o.size.is_some_and(|s| s != a) => FileProblem::SizeDiffers,
                    Some(_) => FileProblem::HashDiffers,
                };
                report.damaged.push(DamagedFile {
                    package: o.package.clone(),
                    version: o.version.clone(),
                    path: machine(),
                    problem,
                    recorded_size: o.size,
                    actual_size: actual,
                });
            }
        }
    }
    (!report.packages.is_empty() || !report.errors.is_empty()).then_some(report)
}

/// Runs `work` over each share on its own scoped thread; the results of all shares, in order.
fn on_threads<T: Sync, R: Send>(shares: Vec<&[T]>, work: impl Fn(&T) -> Vec<R> + Sync) -> Vec<R> {
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| s.spawn(move || share.iter().flat_map(work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Threads the RECORD checks spread their per-file system calls over.
const THREADS: usize = 8;

/// The SHA-256 of the chosen entries (by index), spread over a few threads; a file that cannot
/// be read is left out (its size already matched, so it is not reported as damaged).
fn hash_all(
    host: &Host,
    sp: &str,
    entries: &[(String, Vec<Owner>)],
    chosen: &[usize],
) -> std::collections::HashMap<usize, (String, u64)> {
    let chunk = chosen.len().div_ceil(THREADS).max(1);
    on_threads(chosen.chunks(chunk).collect(), |&i| {
        let machine = crate::host::normalise(&format!("{sp}/{}", entries[i].0));
        sha256_of(&host.fs_path(&machine))
            .ok()
            .map(|d| (i, d))
            .into_iter()
            .collect()
    })
    .into_iter()
    .collect()
}

/// A RECORD directory and its files: (entry index, file name).
type DirGroup<'a> = (&'a str, Vec<(usize, &'a str)>);

/// The size of every listed file, `None` when missing. A stat is a syscall per file (torch
/// lists 12k): files are grouped by their directory, each directory is resolved and opened once
/// and its files are stat'ed relative to it (no walk of the full path per file), on a few
/// threads.
fn stat_all(host: &Host, sp: &str, entries: &[(String, Vec<Owner>)]) -> Vec<Option<u64>> {
    // Entry indices by the directory part of their RECORD path, in order of first appearance.
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut groups: Vec<DirGroup> = Vec::new();
    for (i, (rel, _)) in entries.iter().enumerate() {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        let g = *index.entry(dir).or_insert_with(|| {
            groups.push((dir, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push((i, name));
    }
    // Consecutive groups of about an equal share of files per thread.
    let per_thread = entries.len().div_ceil(THREADS).max(1);
    let mut shares: Vec<&[DirGroup]> = Vec::new();
    let (mut start, mut count) = (0, 0);
    for (k, (_, ids)) in groups.iter().enumerate() {
        count += ids.len();
        if count >= per_thread {
            shares.push(&groups[start..=k]);
            (start, count) = (k + 1, 0);
        }
    }
    if start < groups.len() {
        shares.push(&groups[start..]);
    }
    let mut sizes = vec![None; entries.len()];
    for (i, size) in on_threads(shares, |group| stat_group(host, sp, group)) {
        sizes[i] = size;
    }
    sizes
}

/// The sizes of one RECORD directory's files, by entry index.
fn stat_group(host: &Host, sp: &str, (dir, files): &DirGroup) -> Vec<(usize, Option<u64>)> {
    let machine_dir = crate::host::normalise(&format!("{sp}/{dir}"));
    if host.root() != std::path::Path::new("/") {
        // Under another root a file's own symlink must be resolved inside that root, which
        // only the full path does.
        return files
            .iter()
            .map(|&(i, name)| {
                let real = host.fs_path(&format!("{machine_dir}/{name}"));
                (i, std::fs::metadata(real).ok().map(|m| m.len()))
            })
            .collect();
    }
    let dir_fd = rustix::fs::open(
        host.fs_path(&machine_dir),
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    );
    files
        .iter()
        .map(|&(i, name)| {
            // A missing directory: every file in it is missing.
            let size = dir_fd.as_ref().ok().and_then(|fd| {
                rustix::fs::statat(fd, name, rustix::fs::AtFlags::empty())
                    .ok()
                    .and_then(|st| u64::try_from(st.st_size).ok())
            });
            (i, size)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_record_lines_as_wheels_write_them() {
        // Lines of nvidia-cudnn-cu13 9.26.0.51's RECORD; the last two as pip writes its own.
        let text = "nvidia/cudnn/include/cudnn.h,sha256=HJJqMw_zVzazta9_SsMq2MNccuDbz8lS94vtWaTnsFw,3096\n\
                    \"nvidia/odd,name.h\",sha256=AAAA,1\n\
                    nvidia_cudnn_cu13-9.26.0.51.dist-info/RECORD,,\n\
                    ../../../bin/tool,sha256=BBBB,10\n";
        let e = parse_record(text);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].size, Some(3096));
        assert_eq!(
            e[0].sha256.as_deref(),
            Some("HJJqMw_zVzazta9_SsMq2MNccuDbz8lS94vtWaTnsFw")
        );
        assert_eq!(e[1].path, "nvidia/odd,name.h");
        assert_eq!((e[2].sha256.as_deref(), e[2].size), (None, None));
    }

    #[test]
    fn digests_are_spelt_as_record_spells_them() {
        // sha256("") in RECORD's spelling.
        assert_eq!(
            record_digest(&Sha256::digest(b"")),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }
}
