//! A GPU held against a floor the message states: the compute capability, SM or architecture
//! generation a feature needs ("Minimum capability: 75. Current capability: 70", "requires a
//! GPU with CUDA capability 8.0 or later", "requires SM>=80", "only supports Ampere GPUs or
//! newer", "Please use a GPU with compute capability >= 7.0").
//!
//! What the floor belongs to decides the cause, not the GPU: an attention kernel refusing the
//! card is attention falling back (sdpa_fallback), a number format the card lacks (bf16, fp8,
//! fp16 compute) is the program's dtype (no environment cause: the line leaves the report to
//! its other lines), and any other kernel (a quantization method, an inference op, a library's
//! kernels) has no code for the card (no_kernel_image).

/// Whose floor a line states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floor {
    /// Fused attention kernels (FlashAttention, xFormers' ops, an attention backend).
    Attention,
    /// A number format (bf16, fp8, fp16 compute, tf32) the program asked for.
    Dtype,
    /// Any other kernel: a quantization method, an op, a library's kernels.
    Kernels,
}

/// Architecture generations as messages name them, oldest first.
const GENERATIONS: &[&str] = &[
    "kepler",
    "maxwell",
    "pascal",
    "volta",
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
];

/// Words after a generation or a capability that make it a floor ("Ampere or newer", "7.0 or
/// later", "Pascal and newer architectures").
const OR_NEWER: &[&str] = &[
    "or newer",
    "or later",
    "or higher",
    "or above",
    "and newer",
    "and later",
    "and higher",
    "and above",
    "or greater",
];

/// Words before a generation that make it a floor ("requires Pascal", "at least Volta").
const REQUIRING: &[&str] = &["requires ", "require ", "needs ", "at least "];

/// Words that make a stated capability number a floor, anywhere on its line.
const FLOOR_WORDS: &[&str] = &[
    ">=",
    "> (",
    "minimum",
    "at least",
    "requires",
    "required",
    "require ",
    "only support",
    "below",
    "too old",
    "lower than",
    "less than",
    "insufficient",
    "or later",
    "or higher",
    "or newer",
    "or above",
    "and above",
    "and newer",
];

/// Number formats a GPU generation may lack.
const DTYPES: &[&str] = &[
    "bf16",
    "bfloat16",
    "fp8",
    "float8",
    "fp16",
    "float16",
    "half precision",
    "tf32",
    "compute type",
];

/// Words that name the GPU's side of the comparison where no capability number is given
/// ("not supported in this architecture", "the target device ... do not support").
const GPU_SIDE: &[&str] = &[
    "architecture",
    "device",
    "gpu",
    "capability",
    "card",
    "sm_",
    "sm ",
];

/// A lowered line's floor, if it states one that the GPU falls short of.
///
/// `failed` says whether the line's words already say something failed; a floor stated as a
/// requirement ("requires", "minimum", "please use a GPU with") needs none.
pub fn floor_of(lower: &str, failed: bool) -> Option<Floor> {
    // A build choosing architectures for itself ("will cross-compile for Pascal ... Volta")
    // states no shortfall of any GPU.
    if lower.contains("cross-compil") || lower.contains("cross compil") {
        return None;
    }
    // A floor on CUDA's version for a GPU ("SM 12.x requires CUDA >= 12.9") is the toolkit's;
    // one on what a build was made for ("checks whether torch was built with capabilities
    // >= 7.5") is the build's list, not this GPU.
    if [
        "requires cuda",
        "cuda >=",
        "cuda>=",
        "cuda version",
        "built with",
        "compiled with",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return None;
    }
    let stated = states_capability_floor(lower) || states_generation_floor(lower);
    if !stated {
        return None;
    }
    let demanded = failed
        || ["require", "minimum", "please use", "needs ", "only support"]
            .iter()
            .any(|w| lower.contains(w));
    if !demanded {
        return None;
    }
    Some(whose(lower))
}

/// A number format refused on the GPU's side without a stated floor ("type fp8e4nv not
/// supported in this architecture", "the target device or backend do not support efficient
/// float16 computation"): the program's dtype.
pub fn dtype_refused(lower: &str, unsupported: bool, gpu_named: bool) -> bool {
    // A build without the GPU's code says so whatever format its kernels compute in ("fused
    // mxfp8 MoE ... no kernel image is available").
    let build_lacks = lower.contains("kernel image") || lower.contains("no sm");
    unsupported
        && !build_lacks
        && names_dtype(lower)
        && (gpu_named || GPU_SIDE.iter().any(|w| lower.contains(w)))
}

/// Attention kernels refusing the inputs they were given (a dtype, a head dimension): the
/// program's tensors, not the GPU ("FlashAttention only support fp16 and bf16 data type",
/// "forward only supports head dimension at most 256").
pub fn attention_refuses_inputs(lower: &str) -> bool {
    let refused = lower.contains("only support") || lower.contains("not support");
    // Inputs that make attention fall back to a slower kernel are the fallback itself.
    refused
        && !lower.contains("fall")
        && (names_dtype(lower)
            || ["head dim", "headdim", "head_dim", "data type", "dtype"]
                .iter()
                .any(|w| lower.contains(w)))
}

fn whose(lower: &str) -> Floor {
    // A quantization method's kernels are kernels, whatever number format they use ("The
    // quantization method fp8 is not supported for the current GPU").
    if lower.contains("quantiz") {
        return Floor::Kernels;
    }
    if names_attention(lower) {
        return Floor::Attention;
    }
    if names_dtype(lower) {
        return Floor::Dtype;
    }
    Floor::Kernels
}

fn names_dtype(lower: &str) -> bool {
    DTYPES.iter().any(|d| lower.contains(d))
}

/// Attention named as a kernel, a backend or FlashAttention's abbreviations ("FA2", "FA
/// version 2", xFormers' `fa2F`, `flshattF`).
fn names_attention(lower: &str) -> bool {
    lower.contains("attention")
        || lower.contains("flash")
        || lower.contains("fa version")
        || lower.contains("flshatt")
        || ["fa2", "fa3", "fa4"].iter().any(|w| word_at(lower, w))
}

/// Whether `w` stands in `lower` with no letter, digit or underscore right before it.
fn word_at(lower: &str, w: &str) -> bool {
    lower
        .match_indices(w)
        .any(|(i, _)| !lower[..i].chars().next_back().is_some_and(is_name_char))
}

/// A character of an identifier: `_check_capability` and `ARCH_AMPERE80` are names, not
/// words of a sentence.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// "capability" followed by a number within a few words, or `SM>=80`, on a line with a floor
/// word.
fn states_capability_floor(lower: &str) -> bool {
    let capability = lower.match_indices("capabilit").any(|(i, _)| {
        !lower[..i].chars().next_back().is_some_and(is_name_char)
            && lower[i..].chars().take(40).any(|c| c.is_ascii_digit())
    });
    let sm_compared = lower.match_indices("sm").any(|(i, _)| {
        let rest = lower[i + 2..].trim_start();
        (rest.starts_with(">=") || rest.starts_with('>'))
            && rest
                .trim_start_matches(['>', '=', ' '])
                .starts_with(|c: char| c.is_ascii_digit())
    });
    sm_compared || (capability && FLOOR_WORDS.iter().any(|w| lower.contains(w)))
}

/// A generation followed by "or newer" and its kin, or preceded by "requires" ("Ampere GPUs or
/// newer", "Pascal and newer architectures", "requires Volta").
fn states_generation_floor(lower: &str) -> bool {
    GENERATIONS.iter().any(|g| {
        lower.match_indices(g).any(|(i, _)| {
            let alone_before = !lower[..i].chars().next_back().is_some_and(is_name_char);
            let after_word = lower[i + g.len()..].chars().next();
            let alone_after = !after_word.is_some_and(is_name_char);
            if !alone_before || !alone_after {
                return false;
            }
            let after: String = lower[i + g.len()..].chars().take(40).collect();
            OR_NEWER.iter().any(|w| after.contains(w))
                || REQUIRING.iter().any(|w| lower[..i].ends_with(w))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(line: &str) -> Option<Floor> {
        floor_of(&line.to_lowercase(), false)
    }

    #[test]
    fn floors_by_whose_they_are() {
        for (line, want) in [
            ("ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70.", Floor::Kernels),
            ("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 80. Current capability: 75.", Floor::Kernels),
            ("NotImplementedError: Using quantized Marlin models requires a GPU with CUDA capability 8.0 or later.", Floor::Kernels),
            (" [WARNING]  NVIDIA Inference is only supported on Pascal and newer architectures", Floor::Kernels),
            (" [WARNING]  Please use a GPU with compute capability >= 7.0", Floor::Kernels),
            ("AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90.", Floor::Attention),
            ("RuntimeError: Attention combine function only supports Ampere GPUs or newer.", Floor::Attention),
            ("Cannot use FA version 2 is not supported due to FA2 is only supported on devices with compute capability >= 8", Floor::Attention),
            ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.", Floor::Dtype),
        ] {
            assert_eq!(floor(line), Some(want), "{line}");
        }
    }

    #[test]
    fn no_floor_without_a_shortfall_or_a_number() {
        for line in [
            "By default, Apex will cross-compile for Pascal (compute capabilities 6.0, 6.1, 6.2), Volta (compute capability 7.0) and newer",
            "GPU 0: NVIDIA A100 (compute capability 8.0)",
            "Ampere is a GPU architecture",
            "the adapter requires a password",
        ] {
            assert_eq!(floor(line), None, "{line}");
        }
    }

    #[test]
    fn inputs_refused_by_attention_and_dtypes_refused_by_the_device() {
        assert!(attention_refuses_inputs(
            "runtimeerror: flashattention only support fp16 and bf16 data type"
        ));
        assert!(attention_refuses_inputs(
            "runtimeerror: flashattention forward only supports head dimension at most 256"
        ));
        assert!(!attention_refuses_inputs(
            "flashattention only supports ampere gpus or newer."
        ));
        assert!(dtype_refused(
            "valueerror: type fp8e4nv not supported in this architecture.",
            true,
            false
        ));
        assert!(!dtype_refused("loaded the fp16 weights", false, true));
    }
}
