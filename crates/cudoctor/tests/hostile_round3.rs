//! Hostile input, third round: every loop that hashes, walks, lists or scans an inspected tree
//! ends at the command's time budget (`--timeout`) or a cap, said as "stopped early"; nothing
//! outside `--root` is read through a link; nothing from an inspected environment runs.
//!
//! Every run goes through [`bounded`]: a command that outlives its limit is killed and the
//! test fails, so a regression is a failure, never a hung suite.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

use cudoctor_testkit::{run_bounded, Ran};

/// Runs cudoctor with `env` (nothing else inherited) and kills it after `limit`: a command
/// still running then fails the test.
fn bounded(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ran {
    let cmd = cudoctor_testkit::bare_command(BIN, args, env);
    run_bounded(cmd, None, limit, &format!("{args:?}"))
}

const PREFIX: &str = "/opt/v";
const SITE: &str = "/opt/v/lib/python3.12/site-packages";

/// A root with a venv holding torch (version file, dist-info with a RECORD) at [`PREFIX`].
fn venv_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let sp = real(r, SITE);
    fs::create_dir_all(sp.join("torch/lib")).unwrap();
    fs::create_dir_all(sp.join("torch-2.5.0.dist-info")).unwrap();
    fs::create_dir_all(real(r, "/usr/bin")).unwrap();
    fs::create_dir_all(real(r, "/opt/v/bin")).unwrap();
    fs::write(
        real(r, "/opt/v/pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
    )
    .unwrap();
    fs::write(real(r, "/usr/bin/python3.12"), "").unwrap();
    symlink("/usr/bin/python3.12", real(r, "/opt/v/bin/python3")).unwrap();
    fs::write(
        sp.join("torch/version.py"),
        "__version__ = '2.5.0+cu124'\ncuda = '12.4'\n",
    )
    .unwrap();
    fs::write(
        sp.join("torch-2.5.0.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.0+cu124\n",
    )
    .unwrap();
    fs::write(
        sp.join("torch-2.5.0.dist-info/RECORD"),
        "torch/version.py,,\n",
    )
    .unwrap();
    root
}

fn real(root: &Path, machine: &str) -> PathBuf {
    root.join(machine.trim_start_matches('/'))
}

/// `check --root ROOT --format json` with the venv active, and its parsed report.
fn check_json(root: &Path, extra: &[&str], limit: Duration) -> (Ran, serde_json::Value) {
    let root_s = root.display().to_string();
    let mut args = vec!["check", "--root", &root_s, "--format", "json"];
    args.extend_from_slice(extra);
    let ran = bounded(&args, &[("VIRTUAL_ENV", PREFIX)], limit);
    assert!(
        matches!(ran.code, Some(0 | 1)),
        "{:?}: {}",
        ran.code,
        ran.stderr
    );
    let v = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", ran.stdout, ran.stderr));
    (ran, v)
}

/// The findings of `code` in a check report.
fn findings<'a>(v: &'a serde_json::Value, code: &str) -> Vec<&'a serde_json::Value> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        match x {
            serde_json::Value::Object(m) => {
                if m.get("code").and_then(|c| c.as_str()) == Some(code) && m.contains_key("title") {
                    out.push(x);
                } else {
                    stack.extend(m.values());
                }
            }
            serde_json::Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    out
}

/// The `stopped_early` records of a report's snapshot, as (scan, place, why kind).
fn stops(v: &serde_json::Value) -> Vec<(String, String, String)> {
    let snap = v.get("snapshot").unwrap_or(v);
    snap.get("stopped_early")
        .and_then(|s| s.as_array())
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["scan"].as_str().unwrap_or("").to_string(),
                        s["place"].as_str().unwrap_or("").to_string(),
                        s["why"]["kind"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

// ---- deadlines inside the hashing and scanning loops ----

/// `--verify-wheels` over a RECORD that lists a 20 GB (sparse) library: hashing it took minutes;
/// it now ends at `--timeout`, said as PLT040 with the site directory and the budget.
#[test]
fn hashing_a_20_gb_wheel_file_ends_at_the_timeout_and_says_so() {
    let root = venv_root();
    let sp = real(root.path(), SITE);
    let big = fs::File::create(sp.join("torch/lib/libbig.so")).unwrap();
    big.set_len(20 << 30).unwrap();
    fs::write(
        sp.join("torch-2.5.0.dist-info/RECORD"),
        "torch/version.py,,\ntorch/lib/libbig.so,sha256=AAAA,21474836480\n",
    )
    .unwrap();
    let (ran, v) = check_json(
        root.path(),
        &["--verify-wheels", "--timeout", "1"],
        Duration::from_secs(30),
    );
    assert!(ran.took < Duration::from_secs(15), "took {:?}", ran.took);
    let plt = findings(&v, "PLT040");
    assert_eq!(plt.len(), 1, "{}", ran.stdout);
    let text = plt[0].to_string();
    assert!(
        text.contains("stopped early: the time budget of 1 s"),
        "{text}"
    );
    assert!(text.contains(SITE), "{text}");
    assert!(stops(&v).contains(&(
        "wheel_files".to_string(),
        SITE.to_string(),
        "deadline".to_string()
    )));
    // The file not hashed is not called damaged.
    assert!(findings(&v, "FW010").is_empty(), "{}", ran.stdout);
}

/// A healthy environment says nothing of stopping early.
#[test]
fn an_ordinary_environment_stops_nowhere() {
    let root = venv_root();
    let (_, v) = check_json(root.path(), &["--verify-wheels"], Duration::from_secs(30));
    assert!(findings(&v, "PLT040").is_empty());
    assert!(stops(&v).is_empty());
}

/// Thousands of `.pth` lines that each name a link to one large directory outside the site
/// directory: every line was walked as an editable source tree of its own (thousands of
/// walks of 20,000 entries). The search now ends at `--timeout`, said where it stopped.
#[test]
fn pth_lines_naming_one_big_tree_thousands_of_times_end_at_the_timeout() {
    let root = venv_root();
    let r = root.path();
    let big = real(r, "/srv/big");
    fs::create_dir_all(&big).unwrap();
    for i in 0..20_000 {
        fs::write(big.join(format!("f{i}")), "").unwrap();
    }
    let links = real(r, "/srv/l");
    fs::create_dir_all(&links).unwrap();
    let mut pth = String::new();
    for i in 0..3_000 {
        symlink("/srv/big", links.join(format!("t{i}"))).unwrap();
        pth.push_str(&format!("/srv/l/t{i}\n"));
    }
    fs::write(real(r, SITE).join("many.pth"), pth).unwrap();
    let (ran, v) = check_json(r, &["--timeout", "1"], Duration::from_secs(60));
    assert!(ran.took < Duration::from_secs(15), "took {:?}", ran.took);
    let said = findings(&v, "KRN007")
        .iter()
        .chain(findings(&v, "PLT040").iter())
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(said.contains("time budget of 1 s"), "{}", ran.stdout);
}

// ---- nothing outside --root read through a link ----

/// A library link in an inspected root that points at an absolute path names the root's file,
/// never this machine's: `kernels` and `check` listed (and read) the machine's own file.
#[test]
fn a_library_link_to_an_absolute_path_is_never_read_on_this_machine() {
    let root = venv_root();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("libsecret.so.1");
    fs::write(&victim, b"\x7fELF not for you").unwrap();
    let lib = real(root.path(), SITE).join("torch/lib");
    symlink(&victim, lib.join("libevil.so")).unwrap();
    // A link that escapes with `..` past the root's top, and one at /proc.
    symlink(
        "../../../../../../../../../../../../etc/passwd",
        lib.join("libdots.so"),
    )
    .unwrap();
    symlink("/proc/self/environ", lib.join("libproc.so")).unwrap();
    let root_s = root.path().display().to_string();
    let ran = bounded(
        &[
            "kernels",
            "--root",
            &root_s,
            "--format",
            "json",
            &format!("{SITE}/torch"),
        ],
        &[],
        Duration::from_secs(30),
    );
    for name in ["libevil", "libdots", "libproc"] {
        assert!(!ran.stdout.contains(name), "{name} read:\n{}", ran.stdout);
    }
    let (ran, _) = check_json(root.path(), &[], Duration::from_secs(30));
    for name in ["libevil", "libdots", "libproc"] {
        assert!(!ran.stdout.contains(name), "{name} read:\n{}", ran.stdout);
    }
    // Named on the command line: no such file in the root (it was this machine's file).
    for cmd in ["kernels", "libs"] {
        for name in ["libevil.so", "libdots.so", "libproc.so"] {
            let path = format!("{SITE}/torch/lib/{name}");
            let ran = bounded(
                &[cmd, "--root", &root_s, &path],
                &[],
                Duration::from_secs(30),
            );
            assert_eq!(ran.code, Some(2), "{cmd} {name}: {}", ran.stdout);
            assert!(
                ran.stderr.contains("No such file") || ran.stderr.contains("no such file"),
                "{cmd} {name}: {}",
                ran.stderr
            );
        }
    }
}

// ---- 60,000 .pth files: linear cost, nothing executed ----

/// A site directory with `n` `.pth` files, each naming a directory of its own (one in ten
/// created: each sys.path entry costs a listing in every probe), with an `import` line that
/// would leave a marker if anything ran it; a few hold a 1 MB line.
fn pth_root(n: usize, marker: &Path) -> tempfile::TempDir {
    let root = venv_root();
    let sp = real(root.path(), SITE);
    let dirs = real(root.path(), "/srv/p");
    let huge = "x".repeat(1 << 20);
    for i in 0..n {
        if i % 10 == 0 {
            fs::create_dir_all(dirs.join(format!("d{i}"))).unwrap();
        }
        let mut text = format!(
            "/srv/p/d{i}\nimport os; os.system('touch {}')\n",
            marker.display()
        );
        if i % 10_000 == 0 {
            text.push_str(&huge);
            text.push('\n');
        }
        fs::write(sp.join(format!("p{i:05}.pth")), text).unwrap();
    }
    root
}

/// The reproducer: 60,000 `.pth` directories cost 16 s against 2.7 s for 20,000
/// (quadratic). The cost above an ordinary environment's (measured in the same test) must grow
/// with the number of files, not its square: 60,000 cost at most twice the 3x of 20,000's.
/// Nothing of the `import` lines runs.
#[test]
fn sixty_thousand_pth_files_cost_linear_time_and_nothing_in_them_runs() {
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("ran");
    let limit = Duration::from_secs(240);
    let timeout = ["--timeout", "600"];
    let ordinary = venv_root();
    let (base, _) = check_json(ordinary.path(), &timeout, limit);
    let small = pth_root(20_000, &marker);
    let (twenty, _) = check_json(small.path(), &timeout, limit);
    drop(small);
    let large = pth_root(60_000, &marker);
    let (sixty, v) = check_json(large.path(), &timeout, limit);
    assert!(!marker.exists(), "a .pth import line ran");
    assert!(stops(&v).is_empty(), "{:?}", stops(&v));
    let cost = |r: &Ran| r.took.saturating_sub(base.took).as_secs_f64().max(0.05);
    let ratio = cost(&sixty) / cost(&twenty);
    eprintln!(
        "ordinary {:?}, 20k {:?}, 60k {:?}: ratio {ratio:.2} (linear 3, quadratic 9)",
        base.took, twenty.took, sixty.took
    );
    assert!(
        ratio < 6.0,
        "60k .pth cost {ratio:.2}x 20k's (linear is 3x)"
    );
}

/// A site directory of 150,000 entries (each a `.so` name): every probe that lists it read all
/// of them, a dozen times over. A listing now stops at 100,000 names, said as PLT040, and the
/// check ends near its budget.
#[test]
fn a_site_directory_of_150_000_entries_is_listed_to_a_cap_and_said() {
    let root = venv_root();
    let sp = real(root.path(), SITE);
    for i in 0..150_000 {
        fs::File::create(sp.join(format!("m{i}.so"))).unwrap();
    }
    let (ran, v) = check_json(root.path(), &["--timeout", "1"], Duration::from_secs(120));
    assert!(ran.took < Duration::from_secs(30), "took {:?}", ran.took);
    assert!(stops(&v).contains(&("listing".to_string(), SITE.to_string(), "files".to_string())));
    let said: String = findings(&v, "PLT040")
        .iter()
        .map(|f| f.to_string())
        .collect();
    assert!(said.contains("stopped early: more than 100000"), "{said}");
    // torch is still found in it.
    assert!(ran.stdout.contains("2.5.0+cu124"));
}
