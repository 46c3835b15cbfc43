//! How a node's snapshot travels back through a scheduler's or a log collector's output: short
//! tagged lines, each naming its node, so the output of many nodes can be interleaved line by
//! line (srun, `kubectl logs --prefix`) and still be put back together.
//!
//! ```text
//! cudoctor-fleet/1 gpu07 begin node[01-16]
//! cudoctor-fleet/1 gpu07 data 0 {"schema_version":1,...
//! cudoctor-fleet/1 gpu07 data 1 ...}
//! cudoctor-fleet/1 gpu07 end 2
//! ```
//!
//! Lines stay below 1 KiB: srun forwards a task's output in messages of about that size, and a
//! longer line could be split and interleaved with another node's. Anything before the tag on a
//! line (srun's `--label`, kubectl's `--prefix`) is ignored, as are lines without it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead};

use crate::fleet::FailureKind;

pub const TAG: &str = "cudoctor-fleet/1";
/// Bytes of snapshot JSON per line.
const CHUNK: usize = 900;
/// Longest line kept while reading; longer ones are not frames and are skipped.
const MAX_LINE: usize = 64 << 10;

/// A node name as frames carry it: one token.
pub fn node_token(name: &str) -> String {
    let t: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if t.is_empty() {
        "unknown".into()
    } else {
        t
    }
}

/// The frames of one node's snapshot (compact JSON, no line feed in it).
pub fn encode(node: &str, nodelist: Option<&str>, snapshot_json: &str) -> String {
    let node = node_token(node);
    let mut out = format!(
        "{TAG} {node} begin {}\n",
        nodelist.map(node_token).unwrap_or("-".into())
    );
    let mut rest = snapshot_json;
    let mut seq = 0usize;
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push_str(&format!("{TAG} {node} data {seq} {}\n", &rest[..cut]));
        rest = &rest[cut..];
        seq += 1;
    }
    out.push_str(&format!("{TAG} {node} end {seq}\n"));
    out
}

/// The frame of a node that could not produce a snapshot.
pub fn encode_failure(node: &str, detail: &str) -> String {
    let detail: String = detail
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .take(CHUNK)
        .collect();
    format!("{TAG} {} failed {detail}\n", node_token(node))
}

/// Calls `f` with each line of `r` (with its line feed), holding at most `max` bytes: longer
/// lines are skipped whole.
pub fn for_each_line(mut r: impl BufRead, max: usize, mut f: impl FnMut(&str)) -> io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if !too_long && line.len() + take <= max {
                line.extend_from_slice(&buf[..take]);
            } else {
                too_long = true;
                line.clear();
            }
            r.consume(take);
            if done {
                break;
            }
        }
        if !any {
            return Ok(());
        }
        if !too_long {
            f(&String::from_utf8_lossy(&line));
        }
    }
}

#[derive(Default, Debug)]
struct NodeState {
    json: String,
    next_seq: usize,
    ended: bool,
    broken: Option<String>,
    failed: Option<String>,
}

/// What came back, node by node.
#[derive(Debug, Default)]
pub struct Gathered {
    /// (node, snapshot JSON) of every node whose frames were complete.
    pub snapshots: Vec<(String, String)>,
    /// Nodes whose frames said they failed, broke off, or were garbled.
    pub failures: Vec<(String, FailureKind, String)>,
    /// Every node that sent a `begin`, or any frame.
    pub seen: BTreeSet<String>,
    /// The node lists the nodes announced (`SLURM_STEP_NODELIST`), to find silent nodes.
    pub nodelists: BTreeSet<String>,
}

/// Bytes held at once for the snapshots of nodes that began and have not ended: a log of
/// nodes that never finish (a 720 MB log of 24 unfinished nodes) costs at most this much.
const MAX_PENDING_BYTES: usize = 64 << 20;
/// Nodes told apart; frames of further nodes are ignored (a real fleet is thousands).
const MAX_NODES: usize = 100_000;
/// Node lists kept (each node announces the one of its step).
const MAX_NODELISTS: usize = 1_000;

/// Puts frames back together, line by line, keeping at most `max_node_bytes` per node and
/// [`MAX_PENDING_BYTES`] for all the unfinished ones together.
#[derive(Debug)]
pub struct FrameReader {
    nodes: BTreeMap<String, NodeState>,
    nodelists: BTreeSet<String>,
    max_node_bytes: usize,
    /// Bytes of JSON held for nodes that have not ended.
    pending: usize,
}

impl FrameReader {
    pub fn new(max_node_bytes: usize) -> Self {
        FrameReader {
            nodes: BTreeMap::new(),
            nodelists: BTreeSet::new(),
            max_node_bytes,
            pending: 0,
        }
    }

    pub fn feed_line(&mut self, line: &str) {
        let Some(at) = line.find(TAG) else { return };
        let rest = line[at + TAG.len()..].trim_end_matches(['\r', '\n']);
        let Some(rest) = rest.strip_prefix(' ') else {
            return;
        };
        let mut parts = rest.splitn(3, ' ');
        let (Some(node), Some(kind)) = (parts.next(), parts.next()) else {
            return;
        };
        let arg = parts.next().unwrap_or("");
        let max = self.max_node_bytes;
        if self.nodes.len() >= MAX_NODES && !self.nodes.contains_key(node) {
            return;
        }
        let state = self.nodes.entry(node.to_string()).or_default();
        if state.broken.is_some() {
            return;
        }
        match kind {
            "begin" if arg != "-" && !arg.is_empty() && self.nodelists.len() < MAX_NODELISTS => {
                self.nodelists.insert(arg.to_string());
            }
            "begin" => {}
            "data" => {
                let (seq, chunk) = arg.split_once(' ').unwrap_or((arg, ""));
                match seq.parse::<usize>() {
                    Ok(n) if n == state.next_seq && !state.ended => {
                        if state.json.len() + chunk.len() > max {
                            state.broken = Some(format!("snapshot larger than {} MiB", max >> 20));
                            self.pending -= state.json.len();
                            state.json = String::new();
                        } else if self.pending + chunk.len() > MAX_PENDING_BYTES {
                            state.broken = Some(format!(
                                "not read: the unfinished snapshots of the collection hold more than {} MiB together",
                                MAX_PENDING_BYTES >> 20
                            ));
                            self.pending -= state.json.len();
                            state.json = String::new();
                        } else {
                            state.json.push_str(chunk);
                            self.pending += chunk.len();
                            state.next_seq += 1;
                        }
                    }
                    _ => {
                        state.broken = Some(format!(
                            "output garbled: expected part {}, got {seq:?}",
                            state.next_seq
                        ));
                        if !state.ended {
                            self.pending -= state.json.len();
                        }
                        state.json = String::new();
                    }
                }
            }
            "end" => match arg.trim().parse::<usize>() {
                Ok(n) if n == state.next_seq => {
                    if !state.ended {
                        state.ended = true;
                        // A whole snapshot no longer counts against the unfinished ones.
                        self.pending -= state.json.len();
                    }
                }
                _ => {
                    state.broken = Some(format!(
                        "output garbled: {} parts received, the node sent {arg:?}",
                        state.next_seq
                    ));
                    if !state.ended {
                        self.pending -= state.json.len();
                    }
                    state.json = String::new();
                }
            },
            "failed" => state.failed = Some(arg.to_string()),
            _ => {}
        }
    }

    /// Reads every line of `r` (lines longer than 64 KiB are skipped, being no frames).
    pub fn feed(&mut self, r: impl BufRead) -> io::Result<()> {
        for_each_line(r, MAX_LINE, |l| self.feed_line(l))
    }

    /// What came back. `cut_off` says the output ended because the time limit struck, so a
    /// node that began and did not end timed out rather than failed.
    pub fn finish(self, cut_off: bool) -> Gathered {
        let mut g = Gathered {
            nodelists: self.nodelists,
            ..Default::default()
        };
        for (node, s) in self.nodes {
            g.seen.insert(node.clone());
            if let Some(why) = s.failed {
                g.failures.push((node, FailureKind::Failed, why));
            } else if let Some(why) = s.broken {
                g.failures.push((node, FailureKind::Unreadable, why));
            } else if s.ended {
                g.snapshots.push((node, s.json));
            } else if cut_off {
                g.failures.push((
                    node,
                    FailureKind::TimedOut,
                    "started, but sent no complete snapshot before the time limit".into(),
                ));
            } else {
                g.failures.push((
                    node,
                    FailureKind::Failed,
                    "its output ended before the snapshot was complete".into(),
                ));
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_frames_of_several_nodes_come_back_whole() {
        let json_a = format!("{{\"a\":\"{}\"}}", "é".repeat(2000));
        let json_b = format!("{{\"b\":\"{}\"}}", "x".repeat(5000));
        let fa = encode("node1", Some("node[1-3]"), &json_a);
        let fb = encode("node 2", Some("node[1-3]"), &json_b);
        assert!(fa.lines().chain(fb.lines()).all(|l| l.len() < 1024));
        // Interleave line by line, with srun --label prefixes.
        let mut text = String::new();
        let (la, lb): (Vec<_>, Vec<_>) = (fa.lines().collect(), fb.lines().collect());
        for i in 0..la.len().max(lb.len()) {
            if let Some(l) = la.get(i) {
                text.push_str(&format!("0: {l}\n"));
            }
            if let Some(l) = lb.get(i) {
                text.push_str(&format!("1: {l}\n"));
            }
        }
        text.push_str("unrelated line\n");
        text.push_str(&encode_failure("node3", "nvidia-smi hung\nfor ever"));
        let mut r = FrameReader::new(1 << 20);
        r.feed(text.as_bytes()).unwrap();
        let g = r.finish(false);
        assert_eq!(
            g.snapshots,
            vec![
                ("node1".to_string(), json_a),
                ("node_2".to_string(), json_b)
            ]
        );
        assert_eq!(
            g.failures,
            vec![(
                "node3".to_string(),
                FailureKind::Failed,
                "nvidia-smi hung for ever".to_string()
            )]
        );
        assert_eq!(
            g.nodelists.into_iter().collect::<Vec<_>>(),
            vec!["node[1-3]"]
        );
    }

    #[test]
    fn a_missing_part_a_cut_off_node_and_an_oversized_one_are_reported() {
        let frames = encode("n1", None, &"x".repeat(3000));
        let gap: String = frames
            .lines()
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let cut: String = encode("n2", None, "{}")
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect();
        let big = encode("n3", None, &"y".repeat(5000));
        let mut r = FrameReader::new(4096);
        r.feed(format!("{gap}{cut}{big}").as_bytes()).unwrap();
        let g = r.finish(true);
        assert!(g.snapshots.is_empty());
        let kinds: Vec<_> = g
            .failures
            .iter()
            .map(|(n, k, _)| (n.as_str(), *k))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("n1", FailureKind::Unreadable),
                ("n2", FailureKind::TimedOut),
                ("n3", FailureKind::Unreadable)
            ]
        );
    }

    #[test]
    fn unfinished_nodes_together_hold_a_bounded_amount() {
        let mut r = FrameReader::new(32 << 20);
        let chunk = "x".repeat(900);
        // 24 nodes that never end, 4 MiB each: more than the pending budget together.
        for n in 0..24 {
            for seq in 0..(4 << 20) / 900 {
                r.feed_line(&format!("{TAG} node{n} data {seq} {chunk}\n"));
            }
        }
        assert!(r.pending <= MAX_PENDING_BYTES, "{}", r.pending);
        let held: usize = r.nodes.values().map(|s| s.json.capacity()).sum();
        assert!(held <= MAX_PENDING_BYTES * 2, "{held}");
        // A node that ends afterwards still comes back whole.
        r.feed_line(&format!("{TAG} late begin -\n"));
        r.feed_line(&format!("{TAG} late data 0 {{}}\n"));
        r.feed_line(&format!("{TAG} late end 1\n"));
        r.feed_line(&format!("{TAG} late end 1\n"));
        let g = r.finish(false);
        assert_eq!(g.snapshots.len(), 1);
        assert!(g
            .failures
            .iter()
            .any(|(_, _, why)| why.contains("unfinished snapshots")));
    }

    #[test]
    fn very_long_foreign_lines_are_skipped() {
        let mut text = "z".repeat(200_000);
        text.push('\n');
        text.push_str(&encode("n1", None, "{}"));
        let mut r = FrameReader::new(1 << 20);
        r.feed(text.as_bytes()).unwrap();
        assert_eq!(r.finish(false).snapshots.len(), 1);
    }
}
