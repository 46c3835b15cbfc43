use cudoctor_snapshot::health::clocks_event as ev;
use cudoctor_snapshot::NvmlQuery;

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "GPU002",
    name: "gpu-clocks-slowed",
    layer: Layer::Driver,
    severity: Severity::Warning,
    summary: "A GPU's clocks are held down by a hardware slowdown or by heat",
    docs: r#"## What it checks
The clock event (throttle) reasons NVML reports active on each GPU
(nvmlDeviceGetCurrentClocksEventReasons): HW Slowdown, HW Thermal Slowdown, HW Power Brake
Slowdown (warnings: the board's alarms) and SW Thermal Slowdown (information: the GPU holding
its temperature target under load). Idle, the power cap a busy GPU reaches (SW Power Cap),
application clocks and sync boost are normal and not reported. The finding names DCGM's
failure reason: DCGM_FR_CLOCKS_EVENT_THERMAL for heat, DCGM_FR_CLOCKS_EVENT_VIOLATION for a
hardware slowdown.

## Why it matters
A GPU that slows itself down runs every kernel slower; in a multi-GPU job the slowest GPU sets
the pace of all. A hardware slowdown is asserted by the board (overheating, a power supply or
power brake signal); a thermal slowdown means the cooling does not keep up.

## How to fix
Look at `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER` for the reason and its counters; check
the cooling (fans, airflow, inlet temperature) and the power supply of the node. A slowdown
that persists on an idle GPU is a hardware fault: drain the node and run `dcgmi diag -r 3`.
"#,
    check,
};

/// The reasons that mean a problem, with DCGM's code.
const BAD: &[(u64, &str)] = &[
    (ev::HW_SLOWDOWN, "DCGM_FR_CLOCKS_EVENT_VIOLATION"),
    (ev::HW_THERMAL_SLOWDOWN, "DCGM_FR_CLOCKS_EVENT_THERMAL"),
    (
        ev::HW_POWER_BRAKE_SLOWDOWN,
        "DCGM_FR_CLOCKS_EVENT_VIOLATION",
    ),
    (ev::SW_THERMAL_SLOWDOWN, "DCGM_FR_CLOCKS_EVENT_THERMAL"),
];

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in ctx.gpus() {
        let Some(mask) = g
            .gpu
            .health
            .as_ref()
            .and_then(|h| NvmlQuery::get(&h.clocks_event_reasons))
        else {
            continue;
        };
        let bad: Vec<(u64, &str)> = BAD
            .iter()
            .copied()
            .filter(|(bit, _)| mask & bit != 0)
            .collect();
        if bad.is_empty() {
            continue;
        }
        let names: Vec<&str> = bad.iter().flat_map(|(bit, _)| ev::names(*bit)).collect();
        let thermal = mask & (ev::HW_THERMAL_SLOWDOWN | ev::SW_THERMAL_SLOWDOWN) != 0;
        // The software thermal slowdown alone is the GPU holding its temperature target under
        // load, DCGM's "monitor": information. The hardware ones are the board's alarm.
        let hardware =
            mask & (ev::HW_SLOWDOWN | ev::HW_THERMAL_SLOWDOWN | ev::HW_POWER_BRAKE_SLOWDOWN) != 0;
        let mut codes: Vec<&str> = bad.iter().map(|(_, c)| *c).collect();
        codes.dedup();
        out.push(
            Finding::new(&RULE, format!("{} is slowed down: {}", g.label(), names.join(", ")))
                .severity(if hardware { Severity::Warning } else { Severity::Info })
                .about(Subject::Gpu { index: g.gpu.index })
                .evidence(format!(
                    "clock event reasons active (NVML): {} (mask {mask:#x}); DCGM failure reason {}",
                    ev::names(mask).join(", "),
                    codes.join(", ")
                ))
                .cause(if thermal {
                    "The GPU lowers its clocks because it is too hot: the cooling does not remove the heat it makes."
                } else {
                    "The board asserts a hardware slowdown (an external power brake or over-temperature signal): the GPU runs at reduced clocks until it is released."
                })
                .shell(format!("nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {}", g.gpu.index))
                .prose("check the node's cooling (fans, airflow, inlet temperature) and power supply; a slowdown that stays on an idle GPU is a hardware fault: drain the node and run 'dcgmi diag -r 3'"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn idle_and_power_cap_are_normal() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        health_of(&mut s, 0).clocks_event_reasons = Some(NvmlQuery {
            rc: 0,
            value: Some(ev::SW_POWER_CAP | ev::APPLICATIONS_CLOCKS_SETTING),
        });
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_thermal_slowdown_names_dcgm_s_thermal_code() {
        let mut s = h200();
        health_of(&mut s, 1).clocks_event_reasons = Some(NvmlQuery {
            rc: 0,
            value: Some(ev::HW_SLOWDOWN | ev::HW_THERMAL_SLOWDOWN),
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("HW Thermal Slowdown"), "{}", f[0].title);
        assert!(f[0].evidence[0].contains("DCGM_FR_CLOCKS_EVENT_THERMAL"));
        assert!(f[0].cause.contains("too hot"));
        assert_eq!(f[0].severity, Severity::Warning);
        health_of(&mut s, 1).clocks_event_reasons = Some(NvmlQuery {
            rc: 0,
            value: Some(ev::SW_THERMAL_SLOWDOWN | ev::SW_POWER_CAP),
        });
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Info);
    }
}
