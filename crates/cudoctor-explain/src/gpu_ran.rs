//! A whole log whose only finding is a warning, after which the framework shows the GPU in use
//! and the run going on (TensorFlow's "Could not find TensorRT", then "Created device
//! /job:localhost/replica:0/task:0/device:GPU:0", then epochs): the warning named something
//! optional, and nothing failed. Answering its category would be a false alarm on a healthy
//! run, so the answer says the warning is one and what showed the GPU working.
//!
//! Only a run's start is looked at (its first [`LOOK_LINES`] lines), where frameworks say which
//! device they use, so a long log costs nothing more.

use crate::clause::{self, Severity};
use crate::explanation::{AlsoSeen, Explanation};
use crate::signatures::Role;
use crate::Category;

/// Lines of a log's start looked at for the GPU in use and the run going on.
pub const LOOK_LINES: u64 = 5_000;

/// Where a log first shows the GPU in use, and then the run going on.
#[derive(Debug, Default, Clone)]
pub struct GpuRan {
    gpu_line: Option<(u64, String)>,
    progress_line: Option<u64>,
}

/// A framework's statement that it put its work on a GPU, by the words each framework prints.
fn gpu_in_use(text: &str) -> bool {
    let has = |n: &str| text.contains(n);
    // TensorFlow (1.x and 2.x): the device it created.
    (has("Created device") && has("device:GPU:"))
        || (has("Created TensorFlow device") && has("GPU"))
        // PyTorch Lightning.
        || (has("GPU available: True") && has("used: True"))
        // Scripts' and trainers' own "Using device: cuda", "using cuda device".
        || clause::find_ascii_ci(text, "using device: cuda").is_some()
        || clause::find_ascii_ci(text, "using cuda device").is_some()
        || clause::find_ascii_ci(text, "device: cuda:").is_some()
}

/// A line of a run going on: an epoch counted or a loss reported.
fn progress(text: &str) -> bool {
    let after = |key: &str| {
        clause::find_ascii_ci(text, key).is_some_and(|i| {
            text.get(i + key.len()..)
                .unwrap_or_default()
                .trim_start_matches([' ', ':', '=', '['])
                .starts_with(|c: char| c.is_ascii_digit())
        })
    };
    after("epoch") || after("loss")
}

impl GpuRan {
    /// Reads one line of the log.
    pub fn feed(&mut self, line_no: u64, text: &str) {
        if line_no > LOOK_LINES || self.progress_line.is_some() {
            return;
        }
        if self.gpu_line.is_none() {
            if gpu_in_use(text) {
                self.gpu_line = Some((line_no, crate::scanner::shown(text)));
            }
        } else if progress(text) {
            self.progress_line = Some(line_no);
        }
    }

    /// The GPU line and the progress line, when both come after `line_no`.
    fn after(&self, line_no: u64) -> Option<(&(u64, String), u64)> {
        let gpu = self.gpu_line.as_ref().filter(|(l, _)| *l > line_no)?;
        Some((gpu, self.progress_line?))
    }
}

/// Whether a warning of `category` says something the GPU working refutes: not a slow path
/// taken (attention's fallback), a fault of the hardware, NCCL's transport or memory, which a
/// run shows with the GPU in use.
fn refuted_by_a_run(category: Category) -> bool {
    !matches!(
        category,
        Category::SdpaFallback
            | Category::GpuHardware
            | Category::Nccl
            | Category::OutOfMemory
            | Category::Container
            | Category::NotEnvironment
            | Category::Unknown
    )
}

/// `e` said as a warning the run went past, when its line is a warning and the log then shows
/// the GPU in use and the run going on.
pub fn after_gpu_ran(e: Explanation, ran: &GpuRan) -> Explanation {
    if !refuted_by_a_run(e.category) {
        return e;
    }
    let Some(m) = e.matched.first() else {
        return e;
    };
    if clause::severity(&m.text) != Severity::Warning {
        return e;
    }
    let Some(((gpu_no, gpu_text), progress_no)) = ran.after(m.line_no) else {
        return e;
    };
    let warning = AlsoSeen {
        signature: e.signature.clone().unwrap_or_else(|| m.signature.clone()),
        category: e.category,
        role: Role::Warning,
        line_no: m.line_no,
        text: m.text.clone(),
        count: 1,
    };
    let mut fix = vec![cudoctor_plan::FixStep::Prose(
        "Nothing needs fixing for the GPU to work: the run went on with it.".to_string(),
    )];
    // The warning's own first step, said as one sentence: a heading over steps would read as
    // a step itself.
    if let Some(f) = e.fix.first() {
        fix.push(cudoctor_plan::FixStep::Prose(format!(
            "Only if you want what the warning names ({}), its first step is: {}",
            e.title,
            f.text()
        )));
    }
    let cause = format!(
        "Line {} is a warning, not a failure ({}). Line {gpu_no} shows the framework using the GPU and line {progress_no} the run going on after it: whatever the warning names was optional for this run, and nothing in the log failed.",
        m.line_no, e.title
    );
    let mut e = e.said_instead(
        Category::Unknown,
        0.0,
        "Only a warning, and the GPU ran after it".to_string(),
        cause,
        fix,
        vec![format!("The GPU in use, line {gpu_no}: {gpu_text}")],
    );
    e.also_seen.insert(0, warning);
    e
}

#[cfg(test)]
mod tests {
    use crate::explain_str;
    use crate::Category;

    const TRT_WARNING: &str = "2026-01-01 12:00:00.000000: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT";
    const DEVICE: &str = "2026-01-01 12:00:01.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 78000 MB memory:  -> device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: 0000:00:05.0, compute capability: 9.0";
    const EPOCH: &str =
        "100/100 [==============================] - 5s 20ms/step - loss: 0.5123 - accuracy: 0.81";

    #[test]
    fn a_warning_before_the_gpu_ran_is_no_cause() {
        let log = format!("{TRT_WARNING}\n{DEVICE}\nEpoch 1/10\n{EPOCH}\n");
        let e = explain_str(&log);
        assert_eq!(e.category, Category::Unknown, "{}", e.title);
        assert!(
            e.cause.contains("Line 2 shows the framework using the GPU"),
            "{}",
            e.cause
        );
        assert_eq!(e.also_seen.first().map(|a| a.line_no), Some(1));
    }

    #[test]
    fn without_the_run_going_on_or_after_a_failure_the_answer_stands() {
        // The device created, but no step ran.
        let log = format!("{TRT_WARNING}\n{DEVICE}\n");
        assert_ne!(explain_str(&log).category, Category::Unknown);
        // The warning comes after the GPU was shown in use: the run is not shown past it.
        let log = format!("{DEVICE}\nEpoch 1/10\n{TRT_WARNING}\n");
        assert_ne!(explain_str(&log).category, Category::Unknown);
        // An error line is no warning, whatever ran after it.
        let log = format!(
            "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n{DEVICE}\nEpoch 1/10\n{EPOCH}\n"
        );
        assert_ne!(explain_str(&log).category, Category::Unknown);
    }

    #[test]
    fn a_slow_path_warning_stays_a_finding_though_the_gpu_ran() {
        let log = "/site-packages/torch/nn/functional.py:5504: UserWarning: 1Torch was not compiled with flash attention. (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:455.)\nUsing device: cuda\nepoch 1 loss 0.5\n";
        assert_eq!(explain_str(log).category, Category::SdpaFallback);
    }
}
