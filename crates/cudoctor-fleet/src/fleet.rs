//! The fleet report: many nodes' snapshots lined up fact by fact. For each fact the value most
//! nodes have, and the nodes that differ; which findings only some nodes have; the nodes that
//! failed to report, first.
//!
//! Nodes are added one at a time and only their facts are kept (interned), so memory grows with
//! the number of nodes times the facts that matter, never with the size of the snapshots.

use std::collections::{BTreeMap, HashMap};

use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::Snapshot;
use serde::{Deserialize, Serialize};

use crate::facts::{stack_facts, Topic, ABSENT};

/// Why a node has no snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The task ran and failed (non-zero exit, crash, refused to start).
    Failed,
    /// It did not finish before the time limit.
    TimedOut,
    /// Allocated, but nothing came back from it.
    NoOutput,
    /// Output came back but is not a readable snapshot.
    Unreadable,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Failed => "failed",
            FailureKind::TimedOut => "timed out",
            FailureKind::NoOutput => "no output",
            FailureKind::Unreadable => "unreadable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedNode {
    pub node: String,
    pub kind: FailureKind,
    /// What the scheduler or the node said.
    pub detail: String,
}

/// A node that reported, with its error findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeVerdict {
    pub node: String,
    pub errors: usize,
    pub warnings: usize,
    /// Codes of its errors, sorted.
    pub error_codes: Vec<String>,
}

/// The nodes sharing one value of a fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueGroup {
    pub value: String,
    pub nodes: Vec<String>,
}

/// One fact across the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactSpread {
    pub topic: Topic,
    pub name: String,
    /// The value most nodes have (on a tie, the one sorting first; `tie` says so).
    pub majority: String,
    pub majority_nodes: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tie: bool,
    /// The other values, most common first, each with its nodes.
    pub others: Vec<ValueGroup>,
}

impl FactSpread {
    pub fn drifts(&self) -> bool {
        !self.others.is_empty()
    }
}

/// One finding code across the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingSpread {
    pub code: String,
    pub severity: Severity,
    pub layer: Layer,
    /// The title on the first node that has it (titles may name node-specific paths).
    pub title: String,
    /// The nodes that have it; empty when every reporting node has it.
    pub nodes: Vec<String>,
    pub count: usize,
    pub on_every_node: bool,
}

/// The fleet report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// Nodes that reported a snapshot.
    pub reported: usize,
    /// Nodes that did not: failures first in every rendering.
    pub failed: Vec<FailedNode>,
    /// Reporting nodes with error findings, most errors first.
    pub unhealthy: Vec<NodeVerdict>,
    /// Every fact, those with drift first, then in topic order.
    pub facts: Vec<FactSpread>,
    /// Every finding code, those only some nodes have first, then by severity.
    pub findings: Vec<FindingSpread>,
}

impl FleetReport {
    pub fn drifting(&self) -> impl Iterator<Item = &FactSpread> {
        self.facts.iter().filter(|f| f.drifts())
    }

    pub fn uniform(&self) -> impl Iterator<Item = &FactSpread> {
        self.facts.iter().filter(|f| !f.drifts())
    }

    /// Something needs a look: a failed node, an error, drift, or a finding only some have.
    pub fn has_problems(&self) -> bool {
        !self.failed.is_empty()
            || !self.unhealthy.is_empty()
            || self.drifting().next().is_some()
            || self.findings.iter().any(|f| !f.on_every_node)
    }
}

#[derive(Default)]
struct FindingAgg {
    severity: Option<Severity>,
    layer: Option<Layer>,
    title: String,
    nodes: Vec<u32>,
}

/// What the report keeps of one node: its facts and its findings' codes, not its snapshot.
#[derive(Debug, Clone)]
pub struct NodeSummary {
    pub node: String,
    pub facts: Vec<crate::facts::Fact>,
    /// (code, severity, layer, title) of each finding.
    pub findings: Vec<(String, Severity, Layer, String)>,
}

impl NodeSummary {
    pub fn of(node: &str, snapshot: &Snapshot, findings: &[Finding]) -> NodeSummary {
        NodeSummary {
            node: node.to_string(),
            facts: stack_facts(snapshot),
            findings: findings
                .iter()
                .map(|f| (f.code.clone(), f.severity, f.layer, f.title.clone()))
                .collect(),
        }
    }
}

/// `node2` before `node10`: digits compare as numbers.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, _) => return std::cmp::Ordering::Less,
            (_, None) => return std::cmp::Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let m = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (dx, dy) = (&x[..n], &y[..m]);
                let strip = |d: &[u8]| -> usize { d.iter().take_while(|&&c| c == b'0').count() };
                let (tx, ty) = (&dx[strip(dx)..], &dy[strip(dy)..]);
                let ord = tx
                    .len()
                    .cmp(&ty.len())
                    .then_with(|| tx.cmp(ty))
                    .then(n.cmp(&m));
                if ord != std::cmp::Ordering::Equal {
                    return ord;
                }
                x = &x[n..];
                y = &y[m..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

/// Builds a [`FleetReport`] node by node.
#[derive(Default)]
pub struct FleetBuilder {
    names: Vec<String>,
    verdicts: Vec<NodeVerdict>,
    failed: Vec<FailedNode>,
    /// (topic, fact name) -> index into `values`.
    keys: HashMap<(Topic, String), usize>,
    key_list: Vec<(Topic, String)>,
    /// Per fact: value -> nodes having it.
    values: Vec<HashMap<String, Vec<u32>>>,
    findings: BTreeMap<String, FindingAgg>,
    /// Per node: its snapshot has runtime-probe (`--deep`) facts.
    deep: Vec<bool>,
}

impl FleetBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node that reported, with the findings of its snapshot.
    pub fn add_node(&mut self, node: &str, snapshot: &Snapshot, findings: &[Finding]) {
        self.add_summary(NodeSummary::of(node, snapshot, findings));
    }

    /// Adds a node summarised beforehand (summaries can be made on several threads).
    pub fn add_summary(&mut self, summary: NodeSummary) {
        let id = self.names.len() as u32;
        let node = summary.node;
        self.deep
            .push(summary.facts.iter().any(|f| f.topic == Topic::Deep));
        for fact in summary.facts {
            // Timings differ on every node; the fleet compares what a node is, not its speed.
            if fact.measured.is_some() {
                continue;
            }
            let key = (fact.topic, fact.name);
            let index = match self.keys.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.values.len();
                    self.keys.insert(key.clone(), i);
                    self.key_list.push(key);
                    self.values.push(HashMap::new());
                    i
                }
            };
            self.values[index].entry(fact.value).or_default().push(id);
        }
        let mut error_codes: Vec<String> = Vec::new();
        let mut warnings = 0;
        let mut errors = 0;
        for (code, severity, layer, title) in summary.findings {
            match severity {
                Severity::Error => {
                    errors += 1;
                    error_codes.push(code.clone());
                }
                Severity::Warning => warnings += 1,
                Severity::Info => {}
            }
            let agg = self.findings.entry(code).or_default();
            if agg.nodes.last() != Some(&id) {
                agg.nodes.push(id);
            }
            // The worst severity any node gives the code.
            if agg.severity.is_none_or(|s| severity < s) {
                agg.severity = Some(severity);
            }
            if agg.title.is_empty() {
                agg.title = title;
                agg.layer = Some(layer);
            }
        }
        error_codes.sort();
        error_codes.dedup();
        self.verdicts.push(NodeVerdict {
            node: node.clone(),
            errors,
            warnings,
            error_codes,
        });
        self.names.push(node);
    }

    /// Adds a node that did not report.
    pub fn add_failure(&mut self, node: &str, kind: FailureKind, detail: impl Into<String>) {
        self.failed.push(FailedNode {
            node: node.to_string(),
            kind,
            detail: detail.into(),
        });
    }

    pub fn finish(self) -> FleetReport {
        let total = self.names.len();
        let name = |id: &u32| self.names[*id as usize].clone();
        let mut facts: Vec<FactSpread> = Vec::with_capacity(self.key_list.len());
        for (index, (topic, fact)) in self.key_list.iter().enumerate() {
            let mut groups: Vec<(&String, &Vec<u32>)> = self.values[index].iter().collect();
            let seen: usize = groups.iter().map(|(_, n)| n.len()).sum();
            let mut absent: Vec<u32> = Vec::new();
            if seen < total {
                // Nodes without this fact at all (a package one node lacks). Runtime probes ran
                // only where --deep was asked: of those facts, only nodes that ran the probes
                // and lack this one (no probe of that environment, a probe that failed) count.
                let mut has = vec![false; total];
                for (_, nodes) in &groups {
                    for &n in *nodes {
                        has[n as usize] = true;
                    }
                }
                absent = (0..total as u32)
                    .filter(|&n| !has[n as usize])
                    .filter(|&n| *topic != Topic::Deep || self.deep[n as usize])
                    .collect();
            }
            let absent_value = ABSENT.to_string();
            if !absent.is_empty() {
                groups.push((&absent_value, &absent));
            }
            groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
            let tie = groups.len() > 1 && groups[0].1.len() == groups[1].1.len();
            let (majority, majority_nodes) = groups
                .first()
                .map(|(v, n)| ((*v).clone(), n.len()))
                .unwrap_or_default();
            let others = groups
                .iter()
                .skip(1)
                .map(|(v, nodes)| ValueGroup {
                    value: (*v).clone(),
                    nodes: sorted_names(nodes.iter().map(name).collect()),
                })
                .collect();
            facts.push(FactSpread {
                topic: *topic,
                name: fact.clone(),
                majority,
                majority_nodes,
                tie,
                others,
            });
        }
        facts.sort_by(|a, b| {
            b.drifts()
                .cmp(&a.drifts())
                .then(a.topic.cmp(&b.topic))
                .then_with(|| a.name.cmp(&b.name))
        });

        let mut findings: Vec<FindingSpread> = self
            .findings
            .into_iter()
            .map(|(code, agg)| {
                let on_every_node = agg.nodes.len() == total;
                FindingSpread {
                    code,
                    severity: agg.severity.unwrap_or(Severity::Info),
                    layer: agg.layer.unwrap_or(Layer::Platform),
                    title: agg.title,
                    count: agg.nodes.len(),
                    nodes: if on_every_node {
                        Vec::new()
                    } else {
                        sorted_names(
                            agg.nodes
                                .iter()
                                .map(|id| self.names[*id as usize].clone())
                                .collect(),
                        )
                    },
                    on_every_node,
                }
            })
            .collect();
        findings.sort_by(|a, b| {
            a.on_every_node
                .cmp(&b.on_every_node)
                .then(a.severity.cmp(&b.severity))
                .then_with(|| a.code.cmp(&b.code))
        });

        let mut unhealthy: Vec<NodeVerdict> =
            self.verdicts.into_iter().filter(|v| v.errors > 0).collect();
        unhealthy.sort_by(|a, b| {
            b.errors
                .cmp(&a.errors)
                .then_with(|| natural_cmp(&a.node, &b.node))
        });
        let mut failed = self.failed;
        failed.sort_by(|a, b| {
            a.kind
                .cmp(&b.kind)
                .then_with(|| natural_cmp(&a.node, &b.node))
        });
        FleetReport {
            reported: total,
            failed,
            unhealthy,
            facts,
            findings,
        }
    }
}

fn sorted_names(mut names: Vec<String>) -> Vec<String> {
    names.sort_by(|a, b| natural_cmp(a, b));
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::device_snapshot;

    fn finding(code: &str, severity: Severity) -> Finding {
        serde_json::from_value(serde_json::json!({
            "code": code, "layer": "driver", "severity": severity.name(),
            "title": format!("{code} title"), "evidence": [], "cause": "", "fix": [],
        }))
        .unwrap()
    }

    #[test]
    fn a_node_that_ran_the_probes_without_this_one_is_absent_not_left_out() {
        let fact = |name: &str, value: &str| crate::facts::Fact {
            topic: Topic::Deep,
            name: name.into(),
            value: value.into(),
            measured: None,
        };
        let node = |name: &str, facts: Vec<crate::facts::Fact>| NodeSummary {
            node: name.into(),
            facts,
            findings: Vec::new(),
        };
        let mut b = FleetBuilder::new();
        b.add_summary(node(
            "n1",
            vec![
                fact("probe in /env", "ok"),
                fact("GPUs torch sees in /env", "8"),
            ],
        ));
        b.add_summary(node(
            "n2",
            vec![
                fact("probe in /env", "ok"),
                fact("GPUs torch sees in /env", "8"),
            ],
        ));
        // Ran --deep, but its probe of /env crashed: no count of GPUs.
        b.add_summary(node("n3", vec![fact("probe in /env", "crashed")]));
        // Did not run --deep at all: not drift.
        b.add_summary(node("n4", Vec::new()));
        let r = b.finish();
        let seen = r
            .facts
            .iter()
            .find(|f| f.name == "GPUs torch sees in /env")
            .unwrap();
        assert_eq!((seen.majority.as_str(), seen.majority_nodes), ("8", 2));
        assert_eq!(
            seen.others,
            [ValueGroup {
                value: ABSENT.into(),
                nodes: vec!["n3".into()]
            }]
        );
    }

    #[test]
    fn majority_drift_and_partial_findings() {
        let base = device_snapshot("2026-11-30-h200x2/check.json");
        let mut older = base.clone();
        older.driver.version.as_mut().unwrap().value = "570.86.15".into();
        let mut one_gpu = base.clone();
        one_gpu.driver.gpus.truncate(1);
        one_gpu.python_envs[0]
            .packages
            .retain(|p| p.name != "torchvision");

        let mut b = FleetBuilder::new();
        b.add_node("n1", &base, &[finding("LIB005", Severity::Info)]);
        b.add_node("n2", &base, &[finding("LIB005", Severity::Info)]);
        b.add_node(
            "n3",
            &older,
            &[
                finding("DRV004", Severity::Error),
                finding("LIB005", Severity::Info),
            ],
        );
        b.add_node("n4", &one_gpu, &[finding("LIB005", Severity::Info)]);
        b.add_failure("n5", FailureKind::TimedOut, "no snapshot in 60 s");
        let r = b.finish();

        assert_eq!(r.reported, 4);
        assert_eq!(r.failed[0].node, "n5");
        assert_eq!(r.unhealthy.len(), 1);
        assert_eq!(r.unhealthy[0].error_codes, vec!["DRV004"]);

        let fact = |name: &str| r.facts.iter().find(|f| f.name == name).unwrap();
        let driver = fact("driver version");
        assert_eq!(driver.majority, "580.159.04");
        assert_eq!(driver.majority_nodes, 3);
        assert_eq!(
            driver.others,
            vec![ValueGroup {
                value: "570.86.15".into(),
                nodes: vec!["n3".into()]
            }]
        );
        assert_eq!(fact("GPU count").others[0].nodes, vec!["n4"]);
        let tv = fact("torchvision in torch/.venv (Python 3.12)");
        assert_eq!(tv.others[0].value, ABSENT);
        assert!(!fact("max CUDA").drifts());
        // Drift first.
        assert!(r.facts[0].drifts());

        assert_eq!(r.findings[0].code, "DRV004");
        assert_eq!(r.findings[0].nodes, vec!["n3"]);
        let lib = r.findings.iter().find(|f| f.code == "LIB005").unwrap();
        assert!(lib.on_every_node && lib.nodes.is_empty());
        assert!(r.has_problems());
    }

    #[test]
    fn identical_nodes_have_no_problems() {
        let base = device_snapshot("2026-11-30-h200x2/check.json");
        let mut b = FleetBuilder::new();
        for n in ["a", "b", "c"] {
            b.add_node(n, &base, &[]);
        }
        let r = b.finish();
        assert!(!r.has_problems());
        assert!(r.facts.iter().all(|f| f.majority_nodes == 3));
    }

    #[test]
    fn node_names_sort_naturally() {
        let mut v = vec!["node10", "node2", "node1", "gpu-b", "node02"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, vec!["gpu-b", "node1", "node2", "node02", "node10"]);
    }

    #[test]
    fn a_tie_is_marked() {
        let base = device_snapshot("2026-11-30-h200x2/check.json");
        let mut other = base.clone();
        other.driver.max_cuda.as_mut().unwrap().value = "12.8".into();
        let mut b = FleetBuilder::new();
        b.add_node("a", &base, &[]);
        b.add_node("b", &other, &[]);
        let r = b.finish();
        let f = r.facts.iter().find(|f| f.name == "max CUDA").unwrap();
        assert!(f.tie);
        assert_eq!(f.majority, "12.8");
    }
}
