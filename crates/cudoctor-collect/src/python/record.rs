//! torch's and the nvidia-* wheels' files against their `RECORD`s (the wheel spec's list of
//! `path,sha256=<urlsafe base64>,size`): every file's presence, the size of every library and
//! of every path two distributions both list, and with the full check every file's size and
//! SHA-256.
//!
//! The default check's cost grows with the number of directories and libraries, never with
//! the size of the files: presence comes from one listing per directory, and nothing is hashed
//! unless two distributions claim a path and the sizes cannot tell whose copy it is.

use std::borrow::Cow;
use std::io::Read;

use cudoctor_snapshot::{
    DamagedFile, FileProblem, PathOwner, PythonEnv, ScanKind, SharedPath, WheelCheck,
};
use cudoctor_types::ThreadBudget;
use sha2::{Digest, Sha256};

use super::site::{dist_name_version, normalise_name};
use crate::host::Host;

/// Bytes hashed by default per environment, for paths two distributions list whose sizes do
/// not tell whose copy is on disk (none in most environments); never a multi-GB library.
pub const DEFAULT_HASH_BUDGET: u64 = 16 << 20;

/// How much hashing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hashing {
    /// Hash only the paths two distributions list whose sizes leave the owner open, until this
    /// many bytes have been read.
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

/// One RECORD line, borrowed from its text (a quoted line's fields are unquoted copies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLine<'a> {
    pub path: Cow<'a, str>,
    /// As [`RecordEntry::sha256`].
    pub sha256: Option<Cow<'a, str>>,
    pub size: Option<u64>,
}

impl RecordLine<'_> {
    fn owned(self) -> RecordEntry {
        RecordEntry {
            path: self.path.into_owned(),
            sha256: self.sha256.map(Cow::into_owned),
            size: self.size,
        }
    }
}

/// Parses RECORD (CSV: fields may be double-quoted, `""` inside quotes is a quote).
pub fn parse_record(text: &str) -> Vec<RecordEntry> {
    record_lines(text).map(RecordLine::owned).collect()
}

/// RECORD's lines without a copy: torch's RECORD alone is 12k lines, and only a line with a
/// quote (a path with a comma) needs one.
pub fn record_lines(text: &str) -> impl Iterator<Item = RecordLine<'_>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|line| {
            if line.contains('"') {
                let mut fields = csv_fields(line).into_iter();
                let path = Cow::Owned(fields.next()?);
                let sha256 = fields
                    .next()
                    .and_then(|h| h.strip_prefix("sha256=").map(|d| Cow::Owned(d.to_string())));
                let size = fields.next().and_then(|s| s.trim().parse().ok());
                return Some(RecordLine { path, sha256, size });
            }
            let mut fields = line.split(',');
            let path = Cow::Borrowed(fields.next()?);
            let sha256 = fields
                .next()
                .and_then(|h| h.strip_prefix("sha256="))
                .map(Cow::Borrowed);
            let size = fields.next().and_then(|s| s.trim().parse().ok());
            Some(RecordLine { path, sha256, size })
        })
}

/// Every RECORD text's lines, parsed on a few threads: each text is cut at line ends into
/// pieces of about [`PIECE`] bytes, so torch's large RECORD is shared out too.
fn parse_all<'a>(texts: &[&'a str]) -> Vec<Vec<RecordLine<'a>>> {
    const PIECE: usize = 128 << 10;
    let mut pieces: Vec<(usize, &'a str)> = Vec::new();
    for (t, text) in texts.iter().enumerate() {
        let mut rest: &'a str = text;
        while !rest.is_empty() {
            let cut = if rest.len() <= PIECE {
                rest.len()
            } else {
                rest[PIECE..]
                    .find('\n')
                    .map_or(rest.len(), |n| PIECE + n + 1)
            };
            let (piece, tail) = rest.split_at(cut);
            pieces.push((t, piece));
            rest = tail;
        }
    }
    let per_thread = pieces.len().div_ceil(threads()).max(1);
    let parsed: Vec<(usize, Vec<RecordLine<'a>>)> =
        on_threads(pieces.chunks(per_thread).collect(), |&(t, piece)| {
            vec![(t, record_lines(piece).collect())]
        });
    let mut out: Vec<Vec<RecordLine<'a>>> = texts.iter().map(|_| Vec::new()).collect();
    // Pieces come back in order, so each text's lines keep theirs.
    for (t, lines) in parsed {
        out[t].extend(lines);
    }
    out
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

/// The SHA-256 of the regular file at `path`, reading at most `limit` bytes (its size when it
/// was looked at: a file that grew, or a special file that claims no size, is not read on).
fn sha256_of(
    path: &std::path::Path,
    limit: u64,
    deadline: cudoctor_types::Deadline,
) -> std::io::Result<(String, u64)> {
    let mut file = cudoctor_types::regular_file::open(path)?.take(limit);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        // A file of many GB ends at the command's deadline, unhashed (not judged).
        if deadline.passed() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((record_digest(&hasher.finalize()), total))
}

/// Largest RECORD read (torch's is about 2 MB); a longer one is read this far and said cut.
const MAX_RECORD: u64 = 16 << 20;

/// Most RECORD text read for one environment, all its checked distributions together: each
/// byte costs several in parsed claims, and a planted environment may hold any number of
/// `nvidia-*` distributions (eight RECORDs of 64 MiB took 2.1 GB and 24 s of a `--timeout 2`
/// check). The RECORDs past it are not read, and PLT040 says so.
const MAX_RECORDS: u64 = 32 << 20;

/// A RECORD's text, and whether it was cut at [`MAX_RECORD`] (then its last, partial line is
/// dropped).
fn read_record(host: &Host, record: &str, cap: u64) -> std::io::Result<(String, bool)> {
    let bytes = cudoctor_types::regular_file::read(&host.fs_path(record), cap + 1)?;
    let cut = bytes.len() as u64 > cap;
    let mut text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    if cut {
        let end = text.rfind('\n').map_or(0, |i| i + 1);
        text.truncate(end);
    }
    Ok((text, cut))
}

/// The directories a RECORD path may lead into: the environment's prefix, and the root of the
/// site directory's own scheme (`<root>/lib/python3.X/site-packages`, as for a user site).
fn confinement_roots(env: &PythonEnv, sp: &str) -> Vec<String> {
    let mut roots = vec![crate::host::normalise(&env.prefix)];
    let sp_name = sp.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next();
    if matches!(sp_name, Some("site-packages" | "dist-packages")) {
        roots.push(crate::host::normalise(&format!("{sp}/../../..")));
    }
    roots
}

/// Whether RECORD path `rel` of site directory `sp` stays inside one of `roots`.
fn confined(roots: &[String], sp: &str, rel: &str) -> bool {
    if rel.starts_with('/') || rel.starts_with('\\') || crate::host::is_drive_path(rel) {
        return false;
    }
    // Fast path: no parent step at all stays inside the site directory.
    if !rel.contains("..") {
        return true;
    }
    let p = crate::host::normalise(&format!("{sp}/{rel}"));
    roots.iter().any(|r| {
        let r = r.trim_end_matches(['/', '\\']);
        r.is_empty() || (p.starts_with(r) && p[r.len()..].starts_with(['/', '\\']))
    })
}

/// Whether RECORD path `rel` of a distribution in site directory `sp` of `env` stays inside
/// the environment (no `..` past its root, no absolute path): only those are ever read.
pub(crate) fn within_env(env: &PythonEnv, sp: &str, rel: &str) -> bool {
    confined(&confinement_roots(env, sp), sp, rel)
}

/// One distribution's claim on a path: which checked distribution (index into the site
/// directory's list) and what its RECORD says.
struct Owner<'a> {
    dist: usize,
    sha256: Option<Cow<'a, str>>,
    size: Option<u64>,
}

/// What the file system says about one RECORD path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct OnDisk {
    present: bool,
    /// Its size, read only where the judgement needs it (see [`needs_size`]).
    size: Option<u64>,
}

/// Whether a path's size is read: a library (a truncated download shows there first, and it is
/// what the loader then fails on), a path two distributions list (the size tells whose copy it
/// is), every file with the full check. Everything else is checked for presence only, from its
/// directory's listing: a stat per file of torch's 15k is the cost the default check avoids.
fn needs_size(rel: &str, owners: usize, hashing: Hashing) -> bool {
    hashing == Hashing::Full || owners > 1 || is_shared_object(rel)
}

/// `*.so` and `*.so.*` files.
fn is_shared_object(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.ends_with(".so") || name.contains(".so.")
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
    let mut record_bytes = MAX_RECORDS;
    for sp in &env.site_packages {
        let budgets = Budgets {
            hash: &mut budget,
            record_bytes: &mut record_bytes,
        };
        check_site(host, env, sp, hashing, budgets, &mut report);
    }
    (!report.packages.is_empty() || !report.errors.is_empty()).then_some(report)
}

/// A checked distribution of a site directory: its name, version and dist-info folder.
type Dist = (String, String, String);

/// What is left of an environment's budgets as its site directories are checked in turn.
struct Budgets<'b> {
    /// Bytes that may still be hashed.
    hash: &'b mut u64,
    /// Bytes of RECORD text that may still be read ([`MAX_RECORDS`]).
    record_bytes: &'b mut u64,
}

/// Checks the distributions of one site directory `sp` of `env`, hashing and reading what the
/// remaining `budgets` allow.
fn check_site(
    host: &Host,
    env: &PythonEnv,
    sp: &str,
    hashing: Hashing,
    budgets: Budgets,
    report: &mut WheelCheck,
) {
    let budget = budgets.hash;
    let dists = checked_dists(host, env, sp);
    let caps = record_caps(host, sp, &dists, budgets.record_bytes);
    let texts = read_records(host, sp, &dists, &caps, report);
    let roots = confinement_roots(env, sp);
    let read: Vec<&str> = texts
        .iter()
        .map(|t| match t {
            Some(Ok((t, _))) => t.as_str(),
            _ => "",
        })
        .collect();
    let records = parse_all(&read);
    let mut claims: Vec<(Cow<str>, Owner)> = Vec::new();
    for (dist, ((name, version, _), (text, lines))) in
        dists.iter().zip(texts.iter().zip(records)).enumerate()
    {
        let text = match text {
            // Not read: the budget of RECORD text or of time was spent (said by PLT040).
            None => continue,
            Some(t) => t,
        };
        if let Err(e) = text {
            report.errors.push(e.clone());
            continue;
        }
        report.packages.push(format!("{name} {version}"));
        let outside = claim(&roots, sp, dist, lines, &mut claims);
        if outside > 0 {
            report.errors.push(format!(
                "{name} {version}: RECORD lists {outside} path(s) outside the environment; not checked"
            ));
        }
    }
    let entries = by_path(claims);
    let looked = look_up_all(host, sp, &entries, hashing);
    // Entries the deadline left unlooked are not judged (neither present nor missing).
    let (entries, on_disk): (Vec<_>, Vec<OnDisk>) = entries
        .into_iter()
        .zip(looked)
        .filter_map(|(e, d)| Some((e, d?)))
        .unzip();
    let to_hash = choose_hashes(&entries, &on_disk, hashing, budget, report);
    // Each file is read no further than its size as looked up (else the largest size its
    // owners record): a special or growing file cannot stretch the check.
    let limits: Vec<u64> = entries
        .iter()
        .zip(&on_disk)
        .map(|((_, owners), disk)| {
            let recorded = owners.iter().filter_map(|o| o.size).max().unwrap_or(0);
            disk.size.unwrap_or(recorded)
        })
        .collect();
    let mut digests = hash_all(host, sp, &entries, &to_hash, &limits);
    for (i, ((rel, owners), disk)) in entries.into_iter().zip(on_disk).enumerate() {
        let digest = digests.remove(&i).map(|(d, n)| {
            report.files_hashed += 1;
            report.bytes_hashed += n;
            d
        });
        judge_path(sp, &rel, &owners, disk, digest, &dists, report);
    }
}

/// The checked distributions of site directory `sp`, in directory order.
fn checked_dists(host: &Host, env: &PythonEnv, sp: &str) -> Vec<Dist> {
    host.list_dir(sp)
        .into_iter()
        .filter(|entry| entry.ends_with(".dist-info"))
        .filter_map(|entry| {
            let (name, Some(version)) = dist_name_version(&entry)? else {
                return None;
            };
            let name = normalise_name(&name);
            (checked(&name) && env.package(&name).is_some_and(|p| p.location == sp))
                .then_some((name, version, entry))
        })
        .collect()
}

/// How far each RECORD of `dists` may be read, out of what is left of the environment's RECORD
/// text (`left`, charged with each file's size as it is now), the smallest first: torch's and
/// the real wheels' RECORDs are read whole before a planted giant takes the rest. `None` for
/// those past it, which are not read (the stop is recorded for PLT040). A file that grows
/// after this look is read no further than its size here (and said cut).
fn record_caps(host: &Host, sp: &str, dists: &[Dist], left: &mut u64) -> Vec<Option<u64>> {
    let sizes: Vec<u64> = dists
        .iter()
        .map(|(_, _, entry)| {
            std::fs::metadata(host.fs_path(&format!("{sp}/{entry}/RECORD"))).map_or(0, |m| m.len())
        })
        .collect();
    let mut order: Vec<usize> = (0..dists.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut caps = vec![None; dists.len()];
    for i in order {
        if *left == 0 {
            host.stopped(
                ScanKind::WheelFiles,
                sp,
                cudoctor_snapshot::StopReason::Bytes { limit: MAX_RECORDS },
            );
            break;
        }
        let cap = sizes[i].min(MAX_RECORD).min(*left);
        *left -= cap;
        caps[i] = Some(cap);
    }
    caps
}

/// The RECORDs of `dists`, each read no further than its cap, on the process's workers (a read
/// each, pulled in turn); one cut there is reported. `None` for a RECORD not read: no cap, or
/// the deadline passed first.
fn read_records(
    host: &Host,
    sp: &str,
    dists: &[Dist],
    caps: &[Option<u64>],
    report: &mut WheelCheck,
) -> Vec<Option<Result<(String, bool), String>>> {
    let jobs: Vec<(&Dist, Option<u64>)> = dists.iter().zip(caps.iter().copied()).collect();
    let texts: Vec<Option<Result<(String, bool), String>>> = ThreadBudget::process()
        .map(&jobs, jobs.len(), |((_, _, entry), cap)| {
            let cap = (*cap)?;
            if host.out_of_time(ScanKind::WheelFiles, sp) {
                return None;
            }
            let record = format!("{sp}/{entry}/RECORD");
            Some(read_record(host, &record, cap).map_err(|e| format!("{record}: {e}")))
        })
        .into_iter()
        .map(|r| r.unwrap_or_else(|_| Some(Err("RECORD check failed".into()))))
        .collect();
    for (((_, _, entry), text), cap) in dists.iter().zip(&texts).zip(caps) {
        if let (Some(Ok((_, true))), Some(cap)) = (text, cap) {
            report.errors.push(format!(
                "{sp}/{entry}/RECORD: longer than the {cap} bytes read of it (at most {} MiB \
                 each, {} MiB for an environment's); the entries after that were not checked",
                MAX_RECORD >> 20,
                MAX_RECORDS >> 20
            ));
        }
    }
    texts
}

/// Adds the claims of distribution `dist` (its RECORD's `lines` with a size or hash) to
/// `claims`; returns how many paths it lists outside the environment. A path that leaves the
/// environment (`../../` past its root, an absolute path) is nobody's file to check: never
/// looked at, never hashed.
fn claim<'a>(
    roots: &[String],
    sp: &str,
    dist: usize,
    lines: Vec<RecordLine<'a>>,
    claims: &mut Vec<(Cow<'a, str>, Owner<'a>)>,
) -> usize {
    let mut outside = 0usize;
    for e in lines {
        if e.size.is_none() && e.sha256.is_none() {
            continue;
        }
        if !confined(roots, sp, &e.path) {
            outside += 1;
            continue;
        }
        claims.push((
            e.path,
            Owner {
                dist,
                sha256: e.sha256,
                size: e.size,
            },
        ));
    }
    outside
}

/// Every claim on a path, by path and then by distribution (directory order): each relative
/// path with the distributions that list it (each once, its first line), in path order.
fn by_path<'a>(mut claims: Vec<(Cow<'a, str>, Owner<'a>)>) -> Vec<(Cow<'a, str>, Vec<Owner<'a>>)> {
    claims.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.dist.cmp(&b.1.dist)));
    let mut entries: Vec<(Cow<str>, Vec<Owner>)> = Vec::new();
    for (path, owner) in claims {
        match entries.last_mut() {
            // A RECORD listing one path again says nothing more (a planted one may list it a
            // million times): one claim per distribution.
            Some((p, owners)) if *p == path => {
                if owners.last().is_none_or(|o| o.dist != owner.dist) {
                    owners.push(owner);
                }
            }
            _ => entries.push((path, vec![owner])),
        }
    }
    entries
}

/// Which files to hash, decided in path order against the budget (so the choice does not
/// depend on timing); the hashing itself then runs on several threads. By default only a path
/// two distributions list whose sizes leave the owner open is hashed: none in an environment
/// without overwritten files, so the default cost does not grow with the size of the files.
fn choose_hashes(
    entries: &[(Cow<str>, Vec<Owner>)],
    on_disk: &[OnDisk],
    hashing: Hashing,
    budget: &mut u64,
    report: &mut WheelCheck,
) -> Vec<usize> {
    let mut to_hash: Vec<usize> = Vec::new();
    for (i, ((_, owners), disk)) in entries.iter().zip(on_disk).enumerate() {
        let fitting = owners.iter().filter(|o| fits(o, disk)).count();
        let want_hash = match hashing {
            Hashing::Full => fitting > 0,
            Hashing::Budget(_) => fitting > 1 && !same_content(owners),
        };
        if want_hash && owners.iter().any(|o| o.sha256.is_some()) {
            let size = disk.size.unwrap_or(0);
            if size <= *budget {
                *budget -= size;
                to_hash.push(i);
            } else {
                report.hashes_skipped += 1;
            }
        }
    }
    to_hash
}

/// Judges one RECORD path `rel` of site directory `sp` by what is on disk (and its digest,
/// where it was hashed): shared by distributions that record other contents, or damaged.
fn judge_path(
    sp: &str,
    rel: &str,
    owners: &[Owner],
    disk: OnDisk,
    digest: Option<String>,
    dists: &[Dist],
    report: &mut WheelCheck,
) {
    // Only the files reported need their machine path (15k entries for torch alone).
    let machine = || crate::host::normalise(&format!("{sp}/{rel}"));
    report.files_checked += 1;
    report.sizes_checked += u64::from(disk.size.is_some());
    let size_matches: Vec<bool> = owners.iter().map(|o| fits(o, &disk)).collect();
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
    if owners.len() > 1 && !same_content(owners) {
        if !interchangeable(rel) {
            report.shared_paths.push(SharedPath {
                path: machine(),
                owners: owners
                    .iter()
                    .zip(&matches)
                    .map(|(o, m)| PathOwner {
                        package: dists[o.dist].0.clone(),
                        version: dists[o.dist].1.clone(),
                        matches: *m,
                    })
                    .collect(),
            });
        }
        // Overwritten by a co-owner is reported as sharing, not damage; damage only when the
        // file is nobody's.
        if matches.iter().any(|m| *m != Some(false)) {
            return;
        }
    }
    for (o, m) in owners.iter().zip(&matches) {
        if *m != Some(false) {
            continue;
        }
        let problem = match disk.size {
            _ if !disk.present => FileProblem::Missing,
            Some(a) if o.size.is_some_and(|s| s != a) => FileProblem::SizeDiffers,
            _ => FileProblem::HashDiffers,
        };
        report.damaged.push(DamagedFile {
            package: dists[o.dist].0.clone(),
            version: dists[o.dist].1.clone(),
            path: machine(),
            problem,
            recorded_size: o.size,
            actual_size: disk.size,
        });
    }
}

/// Whether every owner records the same content (`nvidia/__init__.py` of each nvidia wheel):
/// then whose copy it is does not matter.
fn same_content(owners: &[Owner]) -> bool {
    owners
        .windows(2)
        .all(|w| w[0].sha256.is_some() && w[0].sha256 == w[1].sha256)
}

/// Namespace-package markers that many distributions install at one path with contents that
/// differ and do the same: NVIDIA's wheels share `nvidia/`, whose `__init__.py` is empty in
/// most (nvidia-nvjpeg2k-cu12 0.11.0.51, nvidia-nvtiff-cu12 0.8.0.82) and `__path__ =
/// pkgutil.extend_path(...)` under a license header in nvidia-nvimgcodec-cu12 0.9.0.20 (which
/// DALI installs beside them, the sweep's nvidia-dali-cuda120 env). All the `nvidia/*` packages
/// are in the one site directory, so whichever copy was written last, each imports.
const INTERCHANGEABLE: &[&str] = &["nvidia/__init__.py"];

fn interchangeable(rel: &str) -> bool {
    INTERCHANGEABLE.contains(&rel)
}

/// Whether the file on disk can be `owner`'s by what was read of it: present, and of the
/// recorded size where its size was read.
fn fits(owner: &Owner, disk: &OnDisk) -> bool {
    disk.present
        && match (owner.size, disk.size) {
            (Some(recorded), Some(actual)) => recorded == actual,
            _ => true,
        }
}

/// Runs `work` over each share on the process's workers ([`ThreadBudget`]); the results of all
/// shares, in order (none for a share whose work panicked).
fn on_threads<T: Sync, R: Send>(shares: Vec<&[T]>, work: impl Fn(&T) -> Vec<R> + Sync) -> Vec<R> {
    ThreadBudget::process()
        .map(&shares, shares.len(), |share| {
            share.iter().flat_map(&work).collect::<Vec<R>>()
        })
        .into_iter()
        .flat_map(Result::unwrap_or_default)
        .collect()
}

/// How many shares the RECORD checks cut their system calls into: the process's thread
/// budget (each share goes to whichever worker is free).
fn threads() -> usize {
    ThreadBudget::process().limit().max(1)
}

/// The SHA-256 of the chosen entries (by index), spread over a few threads; a file that cannot
/// be read is left out (its size already matched, so it is not reported as damaged).
fn hash_all(
    host: &Host,
    sp: &str,
    entries: &[(Cow<str>, Vec<Owner>)],
    chosen: &[usize],
    limits: &[u64],
) -> std::collections::HashMap<usize, (String, u64)> {
    let chunk = chosen.len().div_ceil(threads()).max(1);
    on_threads(chosen.chunks(chunk).collect(), |&i| {
        if host.out_of_time(ScanKind::WheelFiles, sp) {
            return Vec::new();
        }
        let machine = crate::host::normalise(&format!("{sp}/{}", entries[i].0));
        match sha256_of(&host.fs_path(&machine), limits[i], host.deadline()) {
            Ok(d) => vec![(i, d)],
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                host.out_of_time(ScanKind::WheelFiles, sp);
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    })
    .into_iter()
    .collect()
}

/// One RECORD directory and its files: (entry index, file name, whether its size is read).
type DirGroup<'a> = (&'a str, Vec<(usize, &'a str, bool)>);

/// What the file system says of every listed file. Files are grouped by their directory; each
/// directory is listed once (its names tell which files are there) and only the files whose
/// size is needed are stat'ed, relative to the opened directory; directories are spread over a
/// few threads. `None` for the files of the groups the deadline left unlooked.
fn look_up_all(
    host: &Host,
    sp: &str,
    entries: &[(Cow<str>, Vec<Owner>)],
    hashing: Hashing,
) -> Vec<Option<OnDisk>> {
    // Entry indices by the directory part of their RECORD path, in order of first appearance.
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut groups: Vec<DirGroup> = Vec::new();
    for (i, (rel, owners)) in entries.iter().enumerate() {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_ref()));
        let g = *index.entry(dir).or_insert_with(|| {
            groups.push((dir, Vec::new()));
            groups.len() - 1
        });
        groups[g]
            .1
            .push((i, name, needs_size(rel, owners.len(), hashing)));
    }
    // Consecutive groups of about an equal share of files per thread.
    let per_thread = entries.len().div_ceil(threads()).max(1);
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
    let mut out = vec![None; entries.len()];
    for (i, disk) in on_threads(shares, |group| {
        // Past the deadline the files not looked up stay unknown (not reported missing).
        if host.out_of_time(ScanKind::WheelFiles, sp) {
            return Vec::new();
        }
        look_up_group(host, sp, group)
    }) {
        out[i] = Some(disk);
    }
    out
}

/// One RECORD directory's files, by entry index.
fn look_up_group(host: &Host, sp: &str, (dir, files): &DirGroup) -> Vec<(usize, OnDisk)> {
    let machine_dir = crate::host::normalise(&format!("{sp}/{dir}"));
    // Under another root a file's own symlink must be resolved inside that root, which only
    // the full path does.
    if host.root() != std::path::Path::new("/") {
        return look_up_by_path(host, &machine_dir, files);
    }
    look_up_in_dir(host, &machine_dir, files)
}

/// One directory's files, each by its full path.
fn look_up_by_path(
    host: &Host,
    machine_dir: &str,
    files: &[(usize, &str, bool)],
) -> Vec<(usize, OnDisk)> {
    files
        .iter()
        .map(|&(i, name, sized)| {
            let real = host.fs_path(&format!("{machine_dir}/{name}"));
            let size = std::fs::metadata(real).ok().map(|m| m.len());
            (
                i,
                OnDisk {
                    present: size.is_some(),
                    size: size.filter(|_| sized),
                },
            )
        })
        .collect()
}

/// Windows has no directory descriptors: every file is looked up by its path there.
#[cfg(not(unix))]
fn look_up_in_dir(
    host: &Host,
    machine_dir: &str,
    files: &[(usize, &str, bool)],
) -> Vec<(usize, OnDisk)> {
    look_up_by_path(host, machine_dir, files)
}

/// One directory's files through one directory descriptor: a listing and a stat per sized file,
/// instead of a path walk from the root per file.
#[cfg(unix)]
fn look_up_in_dir(
    host: &Host,
    machine_dir: &str,
    files: &[(usize, &str, bool)],
) -> Vec<(usize, OnDisk)> {
    let Ok(dir_fd) = rustix::fs::open(
        host.fs_path(machine_dir),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        // A missing directory: every file in it is missing.
        return files
            .iter()
            .map(|&(i, ..)| (i, OnDisk::default()))
            .collect();
    };
    // The names the directory holds, each marked against the files RECORD lists in it. A
    // listed symlink counts as present here; its target's existence is left to the stat of
    // the files whose size is read (a wheel installs no symlinks).
    let mut wanted: Vec<(&str, usize)> = files
        .iter()
        .enumerate()
        .map(|(k, &(_, name, _))| (name, k))
        .collect();
    wanted.sort_unstable();
    let mut present = vec![false; files.len()];
    if let Ok(mut listing) = rustix::fs::Dir::read_from(&dir_fd) {
        while let Some(Ok(entry)) = listing.read() {
            let name = entry.file_name().to_bytes();
            if let Ok(at) = wanted.binary_search_by(|(w, _)| w.as_bytes().cmp(name)) {
                present[wanted[at].1] = true;
            }
        }
    }
    files
        .iter()
        .zip(present)
        .map(|(&(i, name, sized), present)| {
            let size = (present && sized)
                .then(|| {
                    rustix::fs::statat(&dir_fd, name, rustix::fs::AtFlags::empty())
                        .ok()
                        .and_then(|st| u64::try_from(st.st_size).ok())
                })
                .flatten();
            // A file whose size was asked for and cannot be stat'ed (a dangling symlink) is
            // not there for the loader either.
            (
                i,
                OnDisk {
                    present: present && (!sized || size.is_some()),
                    size,
                },
            )
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

    /// A site directory with torch's and an nvidia wheel's RECORDs, under `dir`.
    fn site(dir: &std::path::Path) -> (String, PythonEnv) {
        let sp = dir.join("lib/python3.12/site-packages");
        let write = |rel: &str, bytes: &[u8]| {
            let p = sp.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        };
        write("torch/__init__.py", b"import os\n");
        write("torch/lib/libtorch.so", b"0123456789");
        write("torch/_C.so", b"abc");
        write("nvidia/__init__.py", b"");
        write("nvidia/cudnn/lib/libcudnn.so.9", b"cudnn");
        write(
            "torch-2.9.0.dist-info/RECORD",
            b"torch/__init__.py,sha256=x,11\n\
              torch/utils.py,sha256=x,5\n\
              torch/lib/libtorch.so,sha256=x,12\n\
              torch/_C.so,sha256=x,3\n\
              torch/gone/deep.py,sha256=x,1\n\
              torch-2.9.0.dist-info/RECORD,,\n",
        );
        write(
            "nvidia_cudnn_cu13-9.1.0.dist-info/RECORD",
            b"nvidia/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
              nvidia/cudnn/lib/libcudnn.so.9,sha256=x,5\n",
        );
        let sp = sp.to_str().unwrap().to_string();
        let package = |name: &str, version: &str| cudoctor_snapshot::Package {
            name: name.into(),
            version: version.into(),
            location: sp.clone(),
        };
        let env = PythonEnv {
            site_packages: vec![sp.clone()],
            packages: vec![
                package("torch", "2.9.0"),
                package("nvidia-cudnn-cu13", "9.1.0"),
            ],
            ..Default::default()
        };
        (sp, env)
    }

    #[test]
    fn record_paths_outside_the_environment_are_never_looked_at() {
        let dir = tempfile::tempdir().unwrap();
        let (sp, mut env) = site(dir.path());
        env.prefix = dir.path().display().to_string();
        let record = format!("{sp}/torch-2.9.0.dist-info/RECORD");
        let mut text = std::fs::read_to_string(&record).unwrap();
        text.push_str(
            "../../../../../../../../../../proc/self/pagemap,sha256=x,274877906944\n\
             /etc/passwd,sha256=x,1\n\
             ../../../bin/torchrun,sha256=x,3\n",
        );
        std::fs::write(&record, text).unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/torchrun"), b"abc").unwrap();
        let host = Host::real(std::time::Duration::from_secs(5));
        let started = std::time::Instant::now();
        let w = check(&host, &env, Hashing::Full).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(w.bytes_hashed < 1 << 20, "{}", w.bytes_hashed);
        let paths: Vec<&str> = w.damaged.iter().map(|d| d.path.as_str()).collect();
        assert!(
            !paths
                .iter()
                .any(|p| p.contains("pagemap") || p.contains("passwd")),
            "{paths:?}"
        );
        assert!(
            w.errors
                .iter()
                .any(|e| e.contains("2 path(s) outside the environment")),
            "{:?}",
            w.errors
        );
        // The script a wheel puts in the environment's bin/ is still checked.
        assert!(w.files_checked >= 8);
    }

    #[test]
    fn the_nvidia_namespace_marker_of_other_content_is_not_a_shared_file() {
        // nvidia-nvimgcodec-cu12's nvidia/__init__.py (750 bytes, extend_path) beside the empty
        // one of nvidia-nvjpeg2k-cu12, as DALI installs them.
        let dir = tempfile::tempdir().unwrap();
        let (sp, mut env) = site(dir.path());
        std::fs::create_dir_all(format!("{sp}/nvidia_nvimgcodec_cu12-0.9.0.20.dist-info")).unwrap();
        std::fs::write(
            format!("{sp}/nvidia_nvimgcodec_cu12-0.9.0.20.dist-info/RECORD"),
            "nvidia/__init__.py,sha256=cvDDd6aZOR07mAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,750\n",
        )
        .unwrap();
        env.packages.push(cudoctor_snapshot::Package {
            name: "nvidia-nvimgcodec-cu12".into(),
            version: "0.9.0.20".into(),
            location: sp.clone(),
        });
        let host = Host::real(std::time::Duration::from_secs(5));
        let w = check(&host, &env, Hashing::default()).unwrap();
        assert!(w.shared_paths.is_empty(), "{:?}", w.shared_paths);
        assert!(
            w.damaged.is_empty()
                || w.damaged
                    .iter()
                    .all(|d| !d.path.ends_with("nvidia/__init__.py")),
            "{:?}",
            w.damaged
        );
        // Another path shared with other contents still is.
        assert!(!interchangeable("nvidia/cudnn/lib/libcudnn.so.9"));
    }

    #[test]
    fn a_long_record_is_read_whole_and_one_past_the_cap_is_said_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (sp, env) = site(dir.path());
        // Longer than the old 4 MiB text limit: the damaged library listed last is found.
        let record = format!("{sp}/torch-2.9.0.dist-info/RECORD");
        let mut text = String::new();
        for i in 0..300_000 {
            text.push_str(&format!("torch/__pycache__/m{i}.cpython-312.pyc,,\n"));
        }
        text.push_str("torch/lib/libtorch.so,sha256=x,12\n");
        std::fs::write(&record, &text).unwrap();
        assert!(text.len() > 4 << 20);
        let host = Host::real(std::time::Duration::from_secs(5));
        let w = check(&host, &env, Hashing::default()).unwrap();
        assert!(
            w.damaged
                .iter()
                .any(|d| d.path.ends_with("torch/lib/libtorch.so")),
            "{:?}",
            w.damaged
        );
        assert!(w.errors.is_empty(), "{:?}", w.errors);
        // Past the cap: the text ends at a whole line, and the cut is said.
        let (t, cut) = read_record(&host, &record, 1000).unwrap();
        assert!(cut && t.len() <= 1000 && t.ends_with('\n'));
    }

    /// Many `nvidia-*` distributions with large RECORDs: eight of 64 MiB took 2.1 GB and 24 s
    /// of a `--timeout 2` check. The environment's RECORD text is now read to a total; the
    /// RECORD it ends in is said cut, those after it are not read and the stop is recorded.
    #[test]
    fn the_records_of_an_environment_are_read_to_a_total_and_the_rest_said() {
        let dir = tempfile::tempdir().unwrap();
        let (sp, mut env) = site(dir.path());
        let line = "nvidia/x/lib/libx.so.1,sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,12\n";
        let big = line.repeat((12 << 20) / line.len());
        let first = dir.path().join("RECORD.big");
        std::fs::write(&first, &big).unwrap();
        for i in 0..6 {
            let info = format!("{sp}/nvidia_x{i}_cu13-1.0.dist-info");
            std::fs::create_dir_all(&info).unwrap();
            std::fs::hard_link(&first, format!("{info}/RECORD")).unwrap();
            env.packages.push(cudoctor_snapshot::Package {
                name: format!("nvidia-x{i}-cu13"),
                version: "1.0".into(),
                location: sp.clone(),
            });
        }
        let host = Host::real(std::time::Duration::from_secs(60));
        let w = check(&host, &env, Hashing::default()).unwrap();
        // torch and cuDNN (small), two whole big ones, and the one the total cut.
        assert_eq!(w.packages.len(), 5, "{:?}", w.packages);
        let cut: Vec<&String> = w
            .errors
            .iter()
            .filter(|e| e.contains("longer than the"))
            .collect();
        assert_eq!(cut.len(), 1, "{:?}", w.errors);
        let stops = host.stopped_early();
        assert!(
            stops.iter().any(|s| s.scan == ScanKind::WheelFiles
                && s.why == cudoctor_snapshot::StopReason::Bytes { limit: MAX_RECORDS }),
            "{stops:?}"
        );
    }

    #[test]
    fn files_are_checked_for_presence_and_libraries_for_their_size_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let (sp, env) = site(dir.path());
        let host = Host::real(std::time::Duration::from_secs(5));
        let w = check(&host, &env, Hashing::default()).unwrap();
        assert_eq!(w.packages, vec!["nvidia-cudnn-cu13 9.1.0", "torch 2.9.0"]);
        assert_eq!(w.files_checked, 7);
        // Two libraries of torch, one of cuDNN; nvidia/__init__.py's owners agree on its content.
        assert_eq!(w.sizes_checked, 3);
        assert_eq!((w.files_hashed, w.bytes_hashed), (0, 0));
        let damaged: Vec<(String, FileProblem, Option<u64>)> = w
            .damaged
            .iter()
            .map(|d| {
                (
                    d.path.strip_prefix(&sp).unwrap().to_string(),
                    d.problem,
                    d.actual_size,
                )
            })
            .collect();
        // `torch/__init__.py` is 10 bytes, not 11: its size is not read by default.
        assert_eq!(
            damaged,
            vec![
                (
                    "/torch/gone/deep.py".to_string(),
                    FileProblem::Missing,
                    None
                ),
                (
                    "/torch/lib/libtorch.so".into(),
                    FileProblem::SizeDiffers,
                    Some(10)
                ),
                ("/torch/utils.py".into(), FileProblem::Missing, None),
            ]
        );
        // The full check reads every size and hashes every file.
        let full = check(&host, &env, Hashing::Full).unwrap();
        assert_eq!(full.sizes_checked, 5);
        assert!(full
            .damaged
            .iter()
            .any(|d| d.path.ends_with("/torch/_C.so") && d.problem == FileProblem::HashDiffers));
        // The same under another root, where paths resolve inside it.
        let rooted = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        let (_, mut env_in_root) = site(dir.path());
        let inside = "/lib/python3.12/site-packages".to_string();
        env_in_root.site_packages = vec![inside.clone()];
        for p in &mut env_in_root.packages {
            p.location = inside.clone();
        }
        let w_root = check(&rooted, &env_in_root, Hashing::default()).unwrap();
        assert_eq!(w_root.damaged.len(), 3);
        assert_eq!(
            w_root.damaged[0].path,
            format!("{inside}/torch/gone/deep.py")
        );
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
