//! Collection through Slurm: `srun` starts this same cudoctor as one task per allocated node
//! (`cudoctor fleet node`), each task prints its snapshot as frames, and srun brings the
//! output back. Slurm does the allocation, partitions, node selection and launching; srun's own
//! error lines say which nodes failed. srun runs under the project's bounded runner, its output
//! read line by line as it comes, so that what the nodes sent before a time limit is kept.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use cudoctor_collect::host::{run_with_timeout, CommandOutcome};
use cudoctor_collect::runner::{self, Ending, Limits};

use crate::fleet::FailureKind;
use crate::frames::{FrameReader, Gathered};

/// Nodes that did not report: node -> (how, what was said).
pub type NodeFailures = BTreeMap<String, (FailureKind, String)>;

/// Most snapshot JSON kept per node.
pub const MAX_NODE_SNAPSHOT: usize = 32 << 20;
/// Most of srun's stderr kept.
const MAX_STDERR: usize = 4 << 20;
/// Longest stdout line passed on (frame lines are below 1 KiB).
const MAX_LINE: usize = 64 << 10;

/// What to run.
#[derive(Debug, Clone)]
pub struct SrunRequest {
    /// The srun program (`srun`, found on PATH).
    pub srun: String,
    /// The user's srun options (`-N 4 -p gpu --bcast=/tmp/cudoctor`), after ours so they win.
    pub user_args: Vec<String>,
    /// The cudoctor binary the tasks run: this one, at the same path on every node (or copied
    /// there by `--bcast`).
    pub exe: PathBuf,
    /// Arguments of `cudoctor fleet node` (e.g. `--timeout 5`).
    pub node_args: Vec<String>,
    /// How long srun may take in all.
    pub timeout: Duration,
    /// The scontrol program, to expand node lists (`node[01-04]`).
    pub scontrol: String,
}

/// What srun did and what came back.
#[derive(Debug)]
pub struct SrunOutcome {
    /// The command line run, for the report.
    pub command: Vec<String>,
    pub gathered: Gathered,
    /// srun's exit status; None when it was killed at the time limit.
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// Nodes that failed, from frames and srun's stderr, one entry per node.
    pub failures: NodeFailures,
    /// The end of srun's stderr (for an allocation that failed as a whole).
    pub stderr_tail: String,
}

/// The srun command line: one task per node, a failing task not killing the others, and a time
/// limit Slurm itself enforces so nothing outlives the collection.
pub fn srun_command(req: &SrunRequest) -> Vec<String> {
    let minutes = req.timeout.as_secs().div_ceil(60).max(1);
    let mut cmd = vec![
        req.srun.clone(),
        "--ntasks-per-node=1".to_string(),
        "--kill-on-bad-exit=0".to_string(),
        format!("--time={minutes}"),
        "--job-name=cudoctor-fleet".to_string(),
    ];
    cmd.extend(req.user_args.iter().cloned());
    cmd.push(req.exe.to_string_lossy().into_owned());
    cmd.push("fleet".into());
    cmd.push("node".into());
    cmd.extend(req.node_args.iter().cloned());
    cmd
}

/// Runs srun and gathers the nodes' snapshots. An error only when srun could not run at all
/// or failed before any node answered (the allocation was refused, no such partition).
pub fn collect(req: &SrunRequest) -> Result<SrunOutcome, String> {
    let command = srun_command(req);
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    let limits = Limits {
        timeout: req.timeout,
        // Only lines are kept (each frame line is below 1 KiB); the frames go to the reader
        // as they arrive, so what came before a time limit is not lost.
        max_stdout: MAX_LINE,
        max_stderr: MAX_STDERR,
        stderr_tail: false,
    };
    let mut reader = FrameReader::new(MAX_NODE_SNAPSHOT);
    let mut on_line = |line: &str| reader.feed_line(line);
    let done = runner::run(cmd, &limits, Some(&mut on_line));
    let (exit, timed_out) = match done.ending {
        Ending::NotStarted(e) => {
            return Err(format!(
                "cannot run {}: {e} (is this a Slurm login node with srun on PATH?)",
                req.srun
            ))
        }
        Ending::TimedOut => (None, true),
        Ending::Exited(code) => (Some(code), false),
        Ending::Signalled(_) => (None, false),
    };
    let gathered = reader.finish(timed_out);
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    let stderr_tail = tail(&stderr, 20);

    let failures = node_failures(&gathered, &stderr, &req.scontrol, timed_out);
    if gathered.snapshots.is_empty() && failures.is_empty() {
        return Err(if timed_out {
            format!(
                "srun sent nothing in {} s: {}",
                req.timeout.as_secs(),
                if stderr_tail.is_empty() {
                    "no message"
                } else {
                    &stderr_tail
                }
            )
        } else {
            format!(
                "srun exited with status {} and no node answered: {}",
                exit.map(|c| c.to_string()).unwrap_or_else(|| "?".into()),
                if stderr_tail.is_empty() {
                    "no message"
                } else {
                    &stderr_tail
                }
            )
        });
    }
    Ok(SrunOutcome {
        command,
        gathered,
        exit,
        timed_out,
        failures,
        stderr_tail,
    })
}

/// Every node that did not report, with why: from its frames, from srun's and slurmstepd's
/// error lines, and the nodes of the announced node lists that sent nothing.
pub fn node_failures(
    gathered: &Gathered,
    stderr: &str,
    scontrol: &str,
    timed_out: bool,
) -> NodeFailures {
    let mut failures: BTreeMap<String, (FailureKind, String)> = BTreeMap::new();
    for (node, kind, detail) in &gathered.failures {
        failures.insert(node.clone(), (*kind, detail.clone()));
    }
    for (node, kind, detail) in parse_srun_stderr(stderr) {
        if gathered.snapshots.iter().any(|(n, _)| *n == node) {
            continue;
        }
        let entry = failures.entry(node).or_insert((kind, String::new()));
        if kind == FailureKind::TimedOut {
            entry.0 = kind;
        }
        if !entry.1.contains(&detail) {
            if !entry.1.is_empty() {
                entry.1.push_str("; ");
            }
            entry.1.push_str(&detail);
        }
    }
    // Nodes the step ran on that sent nothing at all.
    let mut expected: Vec<String> = Vec::new();
    for list in &gathered.nodelists {
        expected.extend(expand_nodelist(scontrol, list));
    }
    for node in expected {
        if !gathered.seen.contains(&node) && !failures.contains_key(&node) {
            let (kind, why) = if timed_out {
                (FailureKind::TimedOut, "no output before the time limit")
            } else {
                (FailureKind::NoOutput, "allocated, but sent nothing")
            };
            failures.insert(node, (kind, why.to_string()));
        }
    }
    failures
}

/// The node failures srun and slurmstepd name on stderr:
/// `srun: error: node2: task 1: Exited with exit code 3`,
/// `slurmstepd-node2: error: --task-prolog failed status=3`,
/// `slurmstepd: error: *** STEP 12.0 ON node2 CANCELLED AT ... DUE TO TIME LIMIT ***`.
pub fn parse_srun_stderr(text: &str) -> Vec<(String, FailureKind, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("srun: error: ") {
            // `NODE: task N: REASON` or `NODE: tasks N-M: REASON`.
            let mut parts = rest.splitn(3, ": ");
            if let (Some(node), Some(task), Some(reason)) =
                (parts.next(), parts.next(), parts.next())
            {
                if task.starts_with("task") && !node.contains(' ') {
                    out.push((
                        node.to_string(),
                        FailureKind::Failed,
                        format!("{task}: {reason}"),
                    ));
                }
            }
        } else if let Some(rest) = line.strip_prefix("slurmstepd-") {
            if let Some((node, msg)) = rest.split_once(": ") {
                let kind = if msg.contains("DUE TO TIME LIMIT") {
                    FailureKind::TimedOut
                } else {
                    FailureKind::Failed
                };
                out.push((
                    node.to_string(),
                    kind,
                    msg.trim_start_matches("error: ").to_string(),
                ));
            }
        }
        if let Some(i) = line.find(" ON ") {
            if line.contains("CANCELLED") {
                let node = line[i + 4..].split_whitespace().next().unwrap_or("");
                if !node.is_empty() {
                    let kind = if line.contains("DUE TO TIME LIMIT") {
                        FailureKind::TimedOut
                    } else {
                        FailureKind::Failed
                    };
                    let msg = line
                        .trim_start_matches("slurmstepd: error: ")
                        .trim_matches('*')
                        .trim();
                    out.push((node.to_string(), kind, msg.to_string()));
                }
            }
        }
    }
    out
}

/// `node[01-03],gpu7` -> each host name, as Slurm expands it (`scontrol show hostnames`).
fn expand_nodelist(scontrol: &str, list: &str) -> Vec<String> {
    let mut cmd = Command::new(scontrol);
    cmd.args(["show", "hostnames", list])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match run_with_timeout(cmd, Duration::from_secs(10)) {
        CommandOutcome::Exited {
            status: Some(0),
            stdout,
            ..
        } => stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Reads frames from a log (an sbatch output file, `kubectl logs --prefix`), with the srun and
/// slurmstepd error lines among them (sbatch writes srun's stderr to the same file).
pub fn gather_from_log(
    mut r: impl BufRead,
    scontrol: &str,
) -> std::io::Result<(Gathered, NodeFailures)> {
    let mut reader = FrameReader::new(MAX_NODE_SNAPSHOT);
    let mut errors = String::new();
    crate::frames::for_each_line(&mut r, MAX_LINE, |line| {
        if (line.contains("srun: error: ") || line.contains("slurmstepd"))
            && !line.contains(crate::frames::TAG)
        {
            if errors.len() < MAX_STDERR {
                errors.push_str(line);
            }
        } else {
            reader.feed_line(line);
        }
    })?;
    let gathered = reader.finish(false);
    let failures = node_failures(&gathered, &errors, scontrol, false);
    Ok((gathered, failures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srun_and_slurmstepd_error_lines_name_the_node() {
        let text = "slurmstepd-node2: error: --task-prolog failed status=3\n\
                    srun: error: node2: task 1: Exited with exit code 3\n\
                    srun: error: Unable to allocate resources: Invalid partition name specified\n\
                    slurmstepd: error: *** STEP 41.0 ON node3 CANCELLED AT 2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n";
        let got = parse_srun_stderr(text);
        assert_eq!(
            got,
            vec![
                (
                    "node2".into(),
                    FailureKind::Failed,
                    "--task-prolog failed status=3".into()
                ),
                (
                    "node2".into(),
                    FailureKind::Failed,
                    "task 1: Exited with exit code 3".into()
                ),
                (
                    "node3".into(),
                    FailureKind::TimedOut,
                    "STEP 41.0 ON node3 CANCELLED AT 2026-12-01T10:00:00 DUE TO TIME LIMIT".into()
                ),
            ]
        );
    }

    #[test]
    fn the_user_args_come_after_ours_and_the_node_command_last() {
        let req = SrunRequest {
            srun: "srun".into(),
            user_args: vec!["-N".into(), "4".into(), "--time=10".into()],
            exe: PathBuf::from("/opt/cudoctor"),
            node_args: vec!["--timeout".into(), "5".into()],
            timeout: Duration::from_secs(90),
            scontrol: "scontrol".into(),
        };
        assert_eq!(
            srun_command(&req).join(" "),
            "srun --ntasks-per-node=1 --kill-on-bad-exit=0 --time=2 --job-name=cudoctor-fleet -N 4 --time=10 /opt/cudoctor fleet node --timeout 5"
        );
    }

    #[test]
    fn a_missing_srun_is_an_error_not_a_panic() {
        let req = SrunRequest {
            srun: "/nonexistent/srun".into(),
            user_args: vec![],
            exe: PathBuf::from("/bin/true"),
            node_args: vec![],
            timeout: Duration::from_secs(5),
            scontrol: "scontrol".into(),
        };
        assert!(collect(&req)
            .unwrap_err()
            .contains("cannot run /nonexistent/srun"));
    }

    #[test]
    fn a_fake_srun_that_prints_frames_and_fails_one_node() {
        // A stand-in scheduler: prints one node's frames and srun's error line for another.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("srun");
        let frames = crate::frames::encode("n1", None, "{\"schema_version\":1}");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncat <<'EOF'\n{frames}EOF\necho 'srun: error: n2: task 1: Exited with exit code 2' >&2\nexit 2\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let req = SrunRequest {
            srun: script.to_string_lossy().into_owned(),
            user_args: vec![],
            exe: PathBuf::from("/bin/true"),
            node_args: vec![],
            timeout: Duration::from_secs(20),
            scontrol: "/nonexistent/scontrol".into(),
        };
        let out = collect(&req).unwrap();
        assert_eq!(out.exit, Some(2));
        assert_eq!(out.gathered.snapshots.len(), 1);
        assert_eq!(out.failures["n2"].0, FailureKind::Failed);
    }
}
