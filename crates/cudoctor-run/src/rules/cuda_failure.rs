use cudoctor_analyse::{Finding, FixStep, Layer, Severity};
use cudoctor_fatbin::compat::Verdict;
use cudoctor_snapshot::{FailureLibrary, ProcessRecord, RunFacts};
use cudoctor_types::ComputeCapability;

use crate::rule::RunRule;

pub static RULE: RunRule = RunRule {
    code: "RUN008",
    name: "cuda-failure-attributed",
    layer: Layer::Kernels,
    severity: Severity::Error,
    summary: "the program ended on a CUDA failure: the library behind it, and its fix",
    docs: r#"## What it checks
A process of the command that ends on an uncaught exception whose message is a CUDA loading or
launch failure: "no kernel image is available for execution on the device", "invalid device
function", "undefined symbol", "cannot open shared object file". The observer records the
exception and the shared objects mapped into the process at that moment (`/proc/self/maps`);
after the run, cudoctor reads the kernel images of those with CUDA code (the reader `kernels`
uses) and judges them against the GPU the process used (else the machine's GPUs).

## Why it matters
The message names no library: a process maps torch, its CUDA libraries and every extension, and
one of them was built without the GPU's architecture (an extension JIT-built with
`TORCH_CUDA_ARCH_LIST=8.0` on an sm_90 GPU, a source build for another machine's GPU). An
undefined symbol names an extension built against another torch; a library that cannot be opened
is missing from every directory the loader searches.

## How to fix
The finding names the library and its fix: for a torch JIT build (`load`/`load_inline`), remove
its build directory and run again with `TORCH_CUDA_ARCH_LIST` set to the GPU's architecture
(torch builds it again); for another extension, rebuild it with `TORCH_CUDA_ARCH_LIST` set, or
install a build that carries the architecture. An undefined symbol: rebuild the extension against
the installed torch. A missing library: install the package that ships it (`cudoctor libs`
shows what the loader finds).
"#,
    check,
};

/// The kind of CUDA failure an exception's message says, read from the message's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaFailure {
    /// "no kernel image is available for execution on the device", "invalid device function".
    NoKernelImage,
    /// `<library>: undefined symbol: <symbol>`.
    UndefinedSymbol {
        library: Option<String>,
        symbol: String,
    },
    /// `<soname>: cannot open shared object file`.
    CannotOpen { library: String },
}

/// What a message says, if it is one of these failures.
pub fn classify(message: &str) -> Option<CudaFailure> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("no kernel image is available") || lower.contains("invalid device function") {
        return Some(CudaFailure::NoKernelImage);
    }
    if let Some(i) = message.find("undefined symbol: ") {
        let symbol = message[i + "undefined symbol: ".len()..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches([',', '.', '\'', '"'])
            .to_string();
        let before = message[..i].trim_end().trim_end_matches(':');
        let library = before
            .rsplit(|c: char| c.is_whitespace() || c == '\'' || c == '"')
            .next()
            .filter(|w| w.contains(".so"))
            .map(str::to_string);
        return Some(CudaFailure::UndefinedSymbol { library, symbol });
    }
    if let Some(i) = message.find(": cannot open shared object file") {
        let library = message[..i]
            .rsplit(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == '(')
            .next()
            .unwrap_or("")
            .to_string();
        if !library.is_empty() {
            return Some(CudaFailure::CannotOpen { library });
        }
    }
    None
}

fn check(facts: &RunFacts) -> Vec<Finding> {
    facts
        .processes
        .iter()
        .filter_map(|p| {
            let failure = p.failure.as_ref()?;
            let kind = classify(&failure.message)?;
            Some(match kind {
                CudaFailure::NoKernelImage => no_kernel_image(facts, p),
                CudaFailure::UndefinedSymbol { library, symbol } => {
                    undefined_symbol(facts, p, library.as_deref(), &symbol)
                }
                CudaFailure::CannotOpen { library } => cannot_open(p, &library),
            })
        })
        .collect()
}

/// `<type>: <first line>` of the failure, for the evidence.
fn said(p: &ProcessRecord) -> String {
    let f = p.failure.as_ref();
    format!(
        "{} ended on {}: {}",
        p.label(),
        f.map_or("", |f| f.exception.as_str()),
        crate::rules::support::first_line(f.map_or("", |f| f.message.as_str()))
    )
}

/// The GPUs to judge against: the one the process used, else the machine's.
fn gpus(facts: &RunFacts, p: &ProcessRecord) -> Vec<ComputeCapability> {
    let mut out: Vec<ComputeCapability> =
        match p.torch.as_ref().and_then(|t| t.capability.as_deref()) {
            Some(c) => c.parse().into_iter().collect(),
            None => facts
                .gpu_capabilities
                .iter()
                .filter_map(|c| c.parse().ok())
                .collect(),
        };
    out.sort();
    out.dedup();
    out
}

/// torch's own libraries and NVIDIA's wheels carry every supported architecture of their
/// release: an extension is the usual culprit, and named first.
fn is_torch_or_nvidia(path: &str) -> bool {
    path.contains("/torch/lib/") || path.contains("/site-packages/nvidia/")
}

fn no_kernel_image(facts: &RunFacts, p: &ProcessRecord) -> Finding {
    let failure = p.failure.as_ref();
    let mapped: Vec<&FailureLibrary> = facts
        .failure_libraries
        .iter()
        .filter(|l| failure.is_some_and(|f| f.mapped.contains(&l.images.path)))
        .filter(|l| !l.images.sass.is_empty() || !l.images.ptx.is_empty())
        // cuFFT's fat binary is a stub (its kernels live outside it, as KRN002 knows): its
        // sm_75 SASS is not what it runs on the GPU.
        .filter(|l| cudoctor_fatbin::outside::kernels_outside_fat_binary(&l.images.path).is_none())
        .collect();
    let ccs = gpus(facts, p);
    let archs = |l: &FailureLibrary| {
        l.images
            .sass
            .iter()
            .chain(&l.images.ptx)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The mapped libraries that cannot run on one of the GPUs; without a known GPU, the mapped
    // extensions (not torch's or NVIDIA's own) with their architectures.
    let culprits: Vec<&FailureLibrary> = if ccs.is_empty() {
        mapped
            .iter()
            .copied()
            .filter(|l| !is_torch_or_nvidia(&l.images.path))
            .collect()
    } else {
        let mut c: Vec<&FailureLibrary> = mapped
            .iter()
            .copied()
            .filter(|l| {
                ccs.iter().any(|cc| {
                    matches!(
                        cudoctor_analyse::context::library_verdict(&l.images, *cc, None),
                        Verdict::NoImage
                    )
                })
            })
            .collect();
        c.sort_by_key(|l| is_torch_or_nvidia(&l.images.path));
        c
    };
    let gpu_text = if ccs.is_empty() {
        "the GPU".to_string()
    } else {
        ccs.iter().map(|c| c.sm()).collect::<Vec<_>>().join(", ")
    };
    let arch_list = if ccs.is_empty() {
        "the GPU's compute capability".to_string()
    } else {
        ccs.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(";")
    };
    let title = match culprits.first() {
        Some(l) => format!(
            "no kernel image for {gpu_text}: {} carries code for {} only",
            l.images.path,
            archs(l)
        ),
        None => format!(
            "the program failed with \"no kernel image\" on {gpu_text}; no mapped library lacks it"
        ),
    };
    let mut f = RULE.finding(title).evidence(said(p));
    if let Some(c) = p.torch.as_ref().and_then(|t| t.capability.as_deref()) {
        f = f.evidence(format!(
            "the process's GPU: {} (compute capability {c})",
            p.torch
                .as_ref()
                .and_then(|t| t.device_name.as_deref())
                .unwrap_or("unnamed")
        ));
    } else if !facts.gpu_capabilities.is_empty() {
        f = f.evidence(format!(
            "the machine's GPUs: compute capability {}",
            facts.gpu_capabilities.join(", ")
        ));
    }
    for l in &culprits {
        f = f.evidence(format!(
            "{} (mapped): SASS {} PTX {}",
            l.images.path,
            none_if_empty(&l.images.sass),
            none_if_empty(&l.images.ptx)
        ));
    }
    if culprits.is_empty() {
        return f
            .severity(Severity::Warning)
            .evidence(format!(
                "{} mapped libraries with kernel images, each with code for {gpu_text}",
                mapped.len()
            ))
            .cause("The failing kernel came from code that is not a mapped library's fat binary (code compiled at run time, or a library unloaded before the failure).")
            .prose("Run the program with CUDA_LAUNCH_BLOCKING=1 to see which launch fails");
    }
    f = f.cause(format!(
        "A kernel launch found no machine code for {gpu_text} (and no PTX the driver could compile) in the library that holds it: it was built for other GPUs."
    ));
    let mut steps = Vec::new();
    for l in &culprits {
        match &l.jit_build_dir {
            Some(dir) => {
                steps.push(FixStep::Shell(format!(
                    "rm -rf {}   # the JIT build without {gpu_text}; torch builds it again at the next load",
                    cudoctor_plan::quote(dir)
                )));
                steps.push(if ccs.is_empty() {
                    FixStep::Prose(format!(
                        "Run `{}` again with TORCH_CUDA_ARCH_LIST set to the GPU's compute capability (`nvidia-smi --query-gpu=compute_cap --format=csv,noheader`)",
                        crate::shell_words(&facts.command)
                    ))
                } else {
                    FixStep::Shell(format!(
                        "TORCH_CUDA_ARCH_LIST=\"{arch_list}\" {}",
                        crate::shell_words(&facts.command)
                    ))
                });
            }
            None => steps.push(FixStep::Prose(format!(
                "Rebuild {} with TORCH_CUDA_ARCH_LIST set to {arch_list} (or install a build of its package that carries {gpu_text}; `cudoctor kernels` shows what each library carries)",
                l.images.path
            ))),
        }
    }
    f.steps(steps)
}

fn none_if_empty(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

fn undefined_symbol(
    facts: &RunFacts,
    p: &ProcessRecord,
    library: Option<&str>,
    symbol: &str,
) -> Finding {
    let lib = library.unwrap_or("a library");
    let mut f = RULE
        .finding(format!(
            "{lib} needs symbol {symbol}, which nothing loaded provides"
        ))
        .evidence(said(p));
    let torch = p
        .torch
        .as_ref()
        .map(|t| format!("torch {}", t.version))
        .unwrap_or_else(|| "the installed torch".to_string());
    f = f.cause(format!(
        "The library was built against other versions of the libraries it links (another torch, CUDA or Python): its symbols are not those of {torch}."
    ));
    let jit = library.and_then(|l| {
        facts
            .failure_libraries
            .iter()
            .find(|x| x.images.path == l)
            .and_then(|x| x.jit_build_dir.as_deref())
    });
    match (jit, library) {
        (Some(dir), _) => f.steps([
            FixStep::Shell(format!(
                "rm -rf {}   # the JIT build for another torch; torch builds it again against {torch}",
                cudoctor_plan::quote(dir)
            )),
            FixStep::Shell(crate::shell_words(&facts.command)),
        ]),
        (None, Some(l)) => f.prose(format!(
            "Rebuild the extension of {l} against {torch} (from source, with --no-build-isolation so its build sees this torch), or install its build for {torch}"
        )),
        (None, None) => f.prose(format!(
            "Rebuild the extension that needs it against {torch}, or install its build for {torch}"
        )),
    }
}

fn cannot_open(p: &ProcessRecord, library: &str) -> Finding {
    RULE.finding(format!("{library} could not be loaded: no directory the loader searches has it"))
        .evidence(said(p))
        .cause("A library (an extension, or a CUDA library it needs) links this file, and neither its RPATH, LD_LIBRARY_PATH nor the system's library cache finds it.")
        .prose(format!(
            "Install the package that ships {library} in this environment (for a CUDA library, the nvidia-* wheel of torch's CUDA release), then check with `cudoctor libs`"
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::{LibraryImages, ObservedFailure};

    fn failed(message: &str, mapped: &[&str]) -> ProcessRecord {
        ProcessRecord {
            failure: Some(ObservedFailure {
                exception: "torch.AcceleratorError".into(),
                message: message.into(),
                mapped: mapped.iter().map(|s| s.to_string()).collect(),
            }),
            ..process(7)
        }
    }

    fn lib(path: &str, sass: &[&str], jit: Option<&str>) -> FailureLibrary {
        FailureLibrary {
            images: LibraryImages {
                path: path.into(),
                sass: sass.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            exists: true,
            jit_build_dir: jit.map(str::to_string),
        }
    }

    const EXT: &str = "/root/.cache/torch_extensions/py312_cu130/myext/myext.so";
    const TORCH: &str = "/v/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";

    #[test]
    fn messages_are_read_for_their_kind() {
        assert_eq!(
            classify("CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be asynchronously reported"),
            Some(CudaFailure::NoKernelImage)
        );
        assert_eq!(
            classify("CUDA error: invalid device function"),
            Some(CudaFailure::NoKernelImage)
        );
        assert_eq!(
            classify("/x/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"),
            Some(CudaFailure::UndefinedSymbol {
                library: Some("/x/flash_attn_2_cuda.so".into()),
                symbol: "_ZN3c104cuda9SetDeviceEi".into()
            })
        );
        assert_eq!(
            classify("libcudart.so.12: cannot open shared object file: No such file or directory"),
            Some(CudaFailure::CannotOpen {
                library: "libcudart.so.12".into()
            })
        );
        assert_eq!(
            classify("CUDA out of memory. Tried to allocate 2.00 GiB"),
            None
        );
    }

    #[test]
    fn the_mapped_extension_without_the_gpus_arch_is_named_with_its_rebuild() {
        let mut facts = run_of(vec![failed(
            "CUDA error: no kernel image is available for execution on the device",
            &[
                TORCH,
                EXT,
                "/usr/lib/libc.so.6",
                "/v/lib/python3.12/site-packages/nvidia/cu13/lib/libcufft.so.12",
            ],
        )]);
        facts.command = vec!["python".into(), "train.py".into()];
        // cuFFT's stub cubin (sm_75 only, as on the H200 machine) is mapped too: not a culprit.
        let cufft = "/v/lib/python3.12/site-packages/nvidia/cu13/lib/libcufft.so.12";
        facts.failure_libraries = vec![
            lib(TORCH, &["sm_80", "sm_90", "sm_100"], None),
            lib(cufft, &["sm_75"], None),
            lib(
                EXT,
                &["sm_80"],
                Some("/root/.cache/torch_extensions/py312_cu130/myext"),
            ),
        ];
        let f = (RULE.check)(&facts);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].title.contains(EXT) && f[0].title.contains("sm_90"),
            "{}",
            f[0].title
        );
        let steps: Vec<&str> = f[0].fix.iter().map(|s| s.text()).collect();
        assert!(
            steps[0].starts_with("rm -rf /root/.cache/torch_extensions/py312_cu130/myext"),
            "{steps:?}"
        );
        assert_eq!(steps[1], "TORCH_CUDA_ARCH_LIST=\"9.0\" python train.py");
        assert!(!steps.iter().any(|s| s.contains("libcufft")), "{steps:?}");
        // torch's own library runs there: not named.
        assert!(
            !f[0]
                .evidence
                .iter()
                .any(|e| e.starts_with(TORCH) || e.contains("libcufft")),
            "{:?}",
            f[0].evidence
        );
    }

    #[test]
    fn without_a_known_gpu_the_mapped_extensions_are_named() {
        let mut p = failed(
            "no kernel image is available for execution on the device",
            &[TORCH, EXT],
        );
        p.torch.as_mut().unwrap().capability = None;
        let mut facts = run_of(vec![p]);
        facts.failure_libraries = vec![lib(TORCH, &["sm_90"], None), lib(EXT, &["sm_80"], None)];
        let f = (RULE.check)(&facts);
        assert!(
            f[0].title.contains(EXT) && f[0].title.contains("sm_80 only"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].fix[0].text().contains("TORCH_CUDA_ARCH_LIST"),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn other_failures_and_clean_exits_say_nothing() {
        assert!((RULE.check)(&run_of(vec![process(1)])).is_empty());
        let oom = failed("CUDA out of memory", &[]);
        assert!((RULE.check)(&run_of(vec![oom])).is_empty());
        let f = (RULE.check)(&run_of(vec![failed(
            "libcudnn.so.9: cannot open shared object file: No such file or directory",
            &[],
        )]));
        assert!(f[0].title.contains("libcudnn.so.9"), "{}", f[0].title);
    }
}
