//! The numbers a run is judged and compared by, derived from the observed facts: attention
//! backend shares, step time, peak memory, compile counts, collective time.

use cudoctor_snapshot::{median, ProcessRecord, RunFacts, SdpaBackend};
use serde::{Deserialize, Serialize};

/// A run's key numbers, over all its processes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RunSummary {
    /// Python processes that loaded the observer, and those that imported torch.
    pub processes: usize,
    pub torch_processes: usize,
    /// scaled_dot_product_attention calls seen, over all processes.
    pub attention_calls: u64,
    /// Share of calls per backend, largest first (calls whose backend is unknown included).
    pub backends: Vec<BackendShare>,
    /// Steps of the busiest process, and how they were detected (`optimizer`, `forward`).
    pub steps: u64,
    #[serde(default)]
    pub step_source: String,
    /// Median step time over processes' medians (first tenth of steps left out as warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_step_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_step_ms: Option<f64>,
    /// The highest CUDA allocation of any process, and the allocator's highest reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_allocated_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_reserved_mib: Option<f64>,
    pub graph_breaks: u64,
    pub recompilations: u64,
    pub compiled_graphs: u64,
    /// Frames dynamo gave up on (they ran eagerly).
    pub eager_frames: u64,
    /// NCCL time per step (flight recorder), busiest process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_ms_per_step: Option<f64>,
    /// flash_attn / xFormers calls.
    pub extension_calls: u64,
    /// The observer's own steady time per step, busiest process, and its share of that
    /// process's median step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer_ms_per_step: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer_share_of_step: Option<f64>,
    /// Where that time goes, in µs per step, largest first: each timed site of the steady state
    /// (`step`, `attention`, `forward_pre_hook`...) with the per-call costs its timing cannot see
    /// put on the site that pays them (entering the attention wrapper on `attention`, the
    /// module slow path on `forward_pre_hook`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observer_sites: Vec<ObserverSiteCost>,
}

/// One place of the observer's steady time, per step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObserverSiteCost {
    pub site: String,
    pub us_per_step: f64,
}

/// The observer's steady time per step, by site (see [`RunSummary::observer_sites`]).
fn observer_sites(cost: &cudoctor_snapshot::ObserverCost, steps: u64) -> Vec<ObserverSiteCost> {
    let untimed = |key: &str| cost.untimed.get(key).copied().unwrap_or(0.0);
    let mut out: Vec<ObserverSiteCost> = cost
        .sites
        .iter()
        .filter(|x| x.site != "attention_sampled" && x.site != "profile")
        .map(|x| {
            let mut ms = x.ms;
            match x.site.as_str() {
                "forward_pre_hook" => ms += x.calls as f64 * untimed("module_call_us") / 1e3,
                "attention" => {
                    let sampled = cost
                        .sites
                        .iter()
                        .find(|y| y.site == "attention_sampled")
                        .map_or(0, |y| y.calls);
                    ms += (x.calls + sampled) as f64 * untimed("attention_call_us") / 1e3;
                }
                _ => {}
            }
            ObserverSiteCost {
                site: x.site.clone(),
                us_per_step: ms * 1e3 / steps as f64,
            }
        })
        .collect();
    out.sort_by(|a, b| b.us_per_step.total_cmp(&a.us_per_step));
    out
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackendShare {
    /// `None`: sampled calls whose operators named no backend, or calls outside any group.
    pub backend: Option<SdpaBackend>,
    pub calls: u64,
    /// 0..=1 of all attention calls.
    pub share: f64,
}

/// Short name of a share's backend.
pub fn backend_name(b: Option<SdpaBackend>) -> &'static str {
    b.map(SdpaBackend::short).unwrap_or("not identified")
}

/// Processes whose steps count: those that stepped; else every torch process.
pub fn workers(facts: &RunFacts) -> Vec<&ProcessRecord> {
    let stepping: Vec<&ProcessRecord> = facts
        .processes
        .iter()
        .filter(|p| p.steps.count > 0)
        .collect();
    if stepping.is_empty() {
        facts.torch_processes().collect()
    } else {
        stepping
    }
}

pub fn summarise(facts: &RunFacts) -> RunSummary {
    let mut s = RunSummary {
        processes: facts.processes.len(),
        torch_processes: facts.torch_processes().count(),
        ..Default::default()
    };
    let mut by_backend: Vec<(Option<SdpaBackend>, u64)> = Vec::new();
    let mut add =
        |b: Option<SdpaBackend>, n: u64| match by_backend.iter_mut().find(|(x, _)| *x == b) {
            Some((_, c)) => *c += n,
            None => by_backend.push((b, n)),
        };
    for p in &facts.processes {
        s.attention_calls += p.sdpa.calls;
        for g in &p.sdpa.groups {
            add(g.backend(), g.calls);
        }
        if p.sdpa.ungrouped_calls > 0 {
            add(None, p.sdpa.ungrouped_calls);
        }
        s.extension_calls += p.extensions.iter().map(|e| e.calls).sum::<u64>();
        if let Some(c) = &p.compile {
            s.graph_breaks = s.graph_breaks.max(c.graph_break_count());
            s.recompilations = s.recompilations.max(c.recompilations);
            s.compiled_graphs = s.compiled_graphs.max(c.unique_graphs);
            s.eager_frames = s.eager_frames.max(c.eager_frames());
        }
        if let Some(m) = &p.memory {
            s.peak_allocated_mib = Some(
                s.peak_allocated_mib
                    .unwrap_or(0.0)
                    .max(m.peak_allocated_mib),
            );
            s.peak_reserved_mib = Some(s.peak_reserved_mib.unwrap_or(0.0).max(m.peak_reserved_mib));
        }
    }
    let total: u64 = by_backend.iter().map(|(_, c)| c).sum();
    by_backend.sort_by_key(|b| std::cmp::Reverse(b.1));
    s.backends = by_backend
        .into_iter()
        .filter(|(_, c)| *c > 0)
        .map(|(backend, calls)| BackendShare {
            backend,
            calls,
            share: calls as f64 / total.max(1) as f64,
        })
        .collect();
    let workers = workers(facts);
    if let Some(busiest) = workers.iter().max_by_key(|p| p.steps.count) {
        s.steps = busiest.steps.count;
        s.step_source = busiest.steps.source.clone();
        if let (Some(ms), Some(c)) = (
            busiest.collectives.as_ref().and_then(|c| c.nccl_ms()),
            Some(busiest.steps.count).filter(|c| *c > 0),
        ) {
            s.nccl_ms_per_step = Some(ms / c as f64);
        }
        if let (Some(cost), Some(steps)) = (
            busiest.observer_cost.as_ref(),
            Some(busiest.steps.count).filter(|c| *c > 0),
        ) {
            let per_step = cost.steady_ms / steps as f64;
            s.observer_ms_per_step = Some(per_step);
            s.observer_sites = observer_sites(cost, steps);
            s.observer_share_of_step = busiest
                .steps
                .median_ms()
                .filter(|m| *m > 0.0)
                .map(|m| per_step / m);
        }
    }
    let medians: Vec<f64> = workers.iter().filter_map(|p| p.steps.median_ms()).collect();
    s.median_step_ms = median(&medians);
    let p90s: Vec<f64> = workers
        .iter()
        .filter_map(|p| percentile(&p.steps.durations_ms, 0.9))
        .collect();
    s.p90_step_ms = median(&p90s);
    s
}

impl RunSummary {
    /// The share of attention calls that ran this backend.
    pub fn share_of(&self, b: SdpaBackend) -> f64 {
        self.backends
            .iter()
            .filter(|x| x.backend == Some(b))
            .map(|x| x.share)
            .sum::<f64>()
            + 0.0 // an empty sum is -0.0
    }
}

/// The `q` quantile (0..=1) by nearest rank.
pub fn percentile(xs: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v.get(i).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::{ObserverCost, StepObservation};

    fn process(steps: u64, durations: Vec<f64>, steady_ms: f64) -> ProcessRecord {
        ProcessRecord {
            steps: StepObservation {
                source: "optimizer".into(),
                count: steps,
                durations_ms: durations,
                memory: Vec::new(),
            },
            observer_cost: Some(ObserverCost {
                steady_ms,
                sampled_ms: 50.0,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_observers_own_time_is_per_step_of_the_busiest_process_and_leaves_out_sampling() {
        let facts = RunFacts {
            processes: vec![
                process(3, vec![9.0, 9.0], 30.0),
                process(11, vec![20.0; 10], 2.2),
            ],
            ..Default::default()
        };
        let s = summarise(&facts);
        assert_eq!(s.observer_ms_per_step, Some(0.2));
        assert_eq!(s.observer_share_of_step, Some(0.01));
    }

    #[test]
    fn the_observers_time_per_step_by_site_carries_what_its_timing_cannot_see() {
        use cudoctor_snapshot::ObserverSite;
        let site = |site: &str, calls: u64, ms: f64| ObserverSite {
            site: site.into(),
            calls,
            ms,
        };
        let mut p = process(10, vec![1.0; 9], 0.0);
        p.observer_cost = Some(ObserverCost {
            sites: vec![
                site("step", 10, 0.1),
                site("attention", 36, 0.072),
                site("attention_sampled", 4, 40.0),
                site("forward_pre_hook", 20, 0.01),
            ],
            untimed: [
                ("attention_call_us".to_string(), 0.5),
                ("module_call_us".to_string(), 2.0),
            ]
            .into(),
            steady_ms: 0.242,
            ..Default::default()
        });
        let s = summarise(&RunFacts {
            processes: vec![p],
            ..Default::default()
        });
        let got: Vec<(&str, f64)> = s
            .observer_sites
            .iter()
            .map(|x| (x.site.as_str(), (x.us_per_step * 1000.0).round() / 1000.0))
            .collect();
        // step 100 µs / 10; attention (72 µs + 40 calls x 0.5 µs) / 10; hooks (10 + 20 x 2) / 10.
        assert_eq!(
            got,
            [
                ("step", 10.0),
                ("attention", 9.2),
                ("forward_pre_hook", 5.0)
            ]
        );
    }

    #[test]
    fn no_steps_no_per_step_cost() {
        let facts = RunFacts {
            processes: vec![process(0, Vec::new(), 5.0)],
            ..Default::default()
        };
        assert_eq!(summarise(&facts).observer_ms_per_step, None);
    }
}
