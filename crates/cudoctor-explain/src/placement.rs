//! Where a program put its data: a line that compares the devices of the values one operation
//! was given ("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should
//! be the same", "Expected object of device type cuda but got device type cpu", JAX's
//! "incompatible devices for jitted computation ... on platform GPU and ... on platform CPU",
//! CuPy's "Array device must be same as the current device"). Every framework says it in its
//! own words, but each says the same two things: a relation of sameness or expectation, and the
//! devices compared. The program placed its values; nothing of the installation is at fault,
//! and a GPU the line names works well enough to hold some of them.

/// Relations that name devices themselves: one of them said of any value is a comparison of
/// placements.
const DEVICE_RELATIONS: [&str; 11] = [
    "same device",
    "different devices",
    "different device",
    "incompatible devices",
    "conflicting devices",
    "device mismatch",
    "mismatched devices",
    "same as the current device",
    "同一个设备",
    "同一设备",
    "不同设备",
];

/// Relations that compare without naming devices: a comparison of placements only when the
/// line names two different places.
const COMPARISONS: [&str; 6] = [
    "should be the same",
    "must be the same",
    "but got",
    "but found",
    "but expected",
    "expected it to be on",
];

/// The words of both kinds of relation, for the lexicon (so that the scan's gate reads a line
/// holding one).
pub fn relation_words() -> impl Iterator<Item = &'static str> {
    DEVICE_RELATIONS.iter().chain(COMPARISONS.iter()).copied()
}

/// A place a value can be: the GPU (CUDA), the CPU, or another device type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Gpu,
    Cpu,
    Other,
}

/// The place one word names: `cuda`, `cuda:0`, `gpu`, `device:GPU:0`, `torch.cuda.FloatTensor`;
/// `cpu`, `CPU:0`, a tensor type without `cuda` (`torch.FloatTensor`); `mps`, `xla`, `xpu`,
/// `meta`.
fn place_of(word: &str) -> Option<Place> {
    let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let lower = w.to_ascii_lowercase();
    let head = lower
        .rsplit("device:")
        .next()
        .unwrap_or(&lower)
        .split(':')
        .next()
        .unwrap_or_default();
    match head {
        "cuda" | "gpu" => return Some(Place::Gpu),
        "cpu" => return Some(Place::Cpu),
        "mps" | "xla" | "xpu" | "meta" => return Some(Place::Other),
        _ => {}
    }
    if lower.starts_with("torch.") && lower.ends_with("tensor") {
        return Some(if lower.contains(".cuda.") {
            Place::Gpu
        } else {
            Place::Cpu
        });
    }
    None
}

/// Whether `line` compares the devices of a program's values and finds them apart: a relation
/// that names devices, or a comparison on a line that names two different places.
pub fn mixes_devices(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    if DEVICE_RELATIONS.iter().any(|r| lower.contains(r)) {
        return true;
    }
    if !COMPARISONS.iter().any(|r| lower.contains(r)) {
        return false;
    }
    let mut first: Option<Place> = None;
    for word in line.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | '\'')) {
        let Some(p) = place_of(word) else {
            continue;
        };
        match first {
            None => first = Some(p),
            Some(f) if f != p => return true,
            Some(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_of_devices_in_every_framework_s_words() {
        for line in [
            "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
            "RuntimeError: Expected object of backend CUDA but got backend CPU for argument #2 'weight'",
            "RuntimeError: Expected object of device type cuda but got device type cpu for argument #1 'self' in call to _th_index_select",
            "ValueError: Received incompatible devices for jitted computation. Got argument x of main with shape float32[3] and device ids [0] on platform GPU and argument y of main with shape float32[3] and device ids [0] on platform CPU",
            "RuntimeError: Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (while checking arguments for addmm)",
            "ValueError: Array device must be same as the current device: array device = 1 while current = 0",
            "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)",
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
            "RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu",
            "RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'",
            "输入张量和模型不在同一个设备上",
        ] {
            assert!(mixes_devices(line), "{line}");
        }
    }

    /// A comparison of one place with itself, of versions, or of shapes, and a GPU that is not
    /// there, are not placements apart.
    #[test]
    fn other_comparisons_and_missing_gpus_are_not() {
        for line in [
            "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.",
            "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling",
            "RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
            "Expected version 12.1 but got 11.8",
            "the CUDA version should be the same as the one torch was built with",
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "torch.cuda.is_available() returns False but nvidia-smi shows the GPU",
        ] {
            assert!(!mixes_devices(line), "{line}");
        }
    }
}
