use cudoctor_fatbin::compat::Verdict;

use crate::context::{library_verdict, GpuView};
use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN002",
    name: "extension-lacks-gpu-arch",
    layer: Layer::Kernels,
    severity: Severity::Error,
    summary: "An installed CUDA extension has no kernel image for a present GPU",
    docs: r#"## What it checks
Every CUDA library of torch's companions and extensions (flash-attn, xformers, vLLM, bitsandbytes,
apex, DeepSpeed ops, torchvision...) and of the other frameworks' builds (JAX's CUDA plugin,
CuPy, ONNX Runtime's CUDA provider: the shared objects their wheels' RECORDs list), read from its
fat binaries, against each GPU: machine code it runs, PTX it can JIT (warning), or nothing (error).
bitsandbytes ships one build per CUDA release and loads only the one torch's CUDA (or
`BNB_CUDA_VERSION`) chooses: the others are not judged. A module with machine code only for
one architecture family (`sm_90a`, `sm_100f`) that its package's own Python source imports
conditionally (inside `try`/`except ImportError`, under `contextlib.suppress(ImportError)`, after
an `importlib.util.find_spec` probe, under a check or on use, and never at the top of a package's
`__init__`) is an optional backend: on other GPUs it is information ("this backend is
unavailable on sm_80"), not an error; the core modules stay errors. Beside such a module, the
package's other modules that every import expects to fail (vLLM's FA2 module beside its FA3
one) are optional too: on a GPU they reach only through PTX JIT, that is information. A module
with only architecture-specific machine code (`sm_100a`, no PTX) beside a module of the same
package that runs on the GPU is a backend for other GPUs too (sgl-flash-mla's SM100 module
beside its SM90 one), information; without such a module it stays an error.

Besides torch's companions, the wheels of projects published per CUDA release (`faiss-gpu-cu12`,
`spconv-cu126`, `mxnet-cu112`) and of projects whose wheels carry CUDA code (xgboost, catboost,
torchcodec, PyNvVideoCodec, MLX's CUDA backend...) are read: the shared objects their RECORDs
list, each owned by its distribution.

The CUDA binaries the code runs from outside the site directories' packages are judged the same
way: torch's extension cache (the JIT builds of `torch.utils.cpp_extension.load` and
`load_inline`, under `TORCH_EXTENSIONS_DIR` or `~/.cache/torch_extensions/pyXY_cuZZZ/<name>/`),
the source trees of editable installs (`pip install -e .`), `PYTHONPATH` entries and the project
directory (`cudoctor check PATH`, or the current directory when it is a Python project's root)
with their in-place builds. A JIT build in the folder of another Python or torch is never loaded
by the inspected environments: KRN006 names it instead.

## Why it matters
An extension built for other GPUs imports fine and fails at its first kernel: "no kernel image
is available for execution on the device", "CUDA error: invalid device function", or
"FlashAttention only supports Ampere GPUs or newer". Prebuilt wheels often target only the
data-center archs of their release; source builds target only the GPU of the machine they were
built on.

## How to fix
A JIT build: set `TORCH_CUDA_ARCH_LIST` to the GPUs' architectures where the program runs and
remove its build directory; the next `load`/`load_inline` builds it again. An in-place or
editable build: rebuild it in its source tree with `TORCH_CUDA_ARCH_LIST` set.

A wheel published per CUDA release (`spconv-cu126`) has no source under that name: install its
project's build for a newer CUDA whose code includes the GPU, or build the project itself. A
package that is no torch extension (the environment has no torch): install a release of it
that carries the architecture.

Otherwise install a build of the package that includes the GPU's architecture, or rebuild it from source
for every GPU you run on (the report prints the command): `TORCH_CUDA_ARCH_LIST` names the
architectures of most extensions; flash-attn reads `FLASH_ATTN_CUDA_ARCHS` instead (`80;90;100;120`)
and needs `FLASH_ATTENTION_FORCE_BUILD=TRUE`, or its setup downloads a prebuilt wheel. The build
uses `--no-binary <pkg> --no-cache-dir` so pip neither reinstalls the same wheel nor a cached
build, and `--no-deps --no-build-isolation` so it builds against the installed torch and keeps it.
One finding covers every GPU of the same compute capability.
"#,
    check,
};

/// Its findings are about one package built for another torch or CUDA: rank 4 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::Package,
    rank: 4,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(images) = &ctx.snap.kernel_images else {
        return Vec::new();
    };
    let gpus = ctx.gpus();
    let judging = Judging {
        ctx,
        images,
        driver_cuda: ctx.driver_max_cuda().map(|(c, _)| c),
        all_ccs: distinct_ccs(&gpus),
    };
    let torches: Vec<&cudoctor_snapshot::TorchBuild> =
        ctx.torch_envs().iter().map(|t| t.torch).collect();
    let mut unloaded = ctx.bitsandbytes_unloaded();
    unloaded.extend(ctx.unloaded_variants());
    // One finding per compute capability: eight identical GPUs are one problem.
    let by_cc = gpus_by_cc(&gpus);
    let mut found = Judged::default();
    for lib in &images.libraries {
        if !is_judged_extension(ctx, lib, &torches, &unloaded) {
            continue;
        }
        for (cc, group) in &by_cc {
            judging.judge(lib, *cc, group, &mut found);
        }
    }
    found.out
}

/// The findings so far and, index for index, the key each stands for: one finding per package
/// and compute capability, since a package's libraries come from one build.
#[derive(Default)]
struct Judged {
    out: Vec<Finding>,
    keys: Vec<(String, cudoctor_kb::ComputeCapability)>,
}

/// What every library is judged against: the machine's GPUs and driver.
struct Judging<'a> {
    ctx: &'a Context<'a>,
    images: &'a cudoctor_snapshot::KernelImages,
    driver_cuda: Option<cudoctor_kb::CudaVersion>,
    all_ccs: Vec<cudoctor_kb::ComputeCapability>,
}

/// The compute capabilities present, each once, in order: the architectures a rebuild targets.
fn distinct_ccs(gpus: &[GpuView]) -> Vec<cudoctor_kb::ComputeCapability> {
    let mut v: Vec<_> = gpus.iter().filter_map(|g| g.cc).collect();
    v.sort();
    v.dedup();
    v
}

/// The GPUs grouped by compute capability, in the order they first appear.
fn gpus_by_cc<'g, 'a>(
    gpus: &'g [GpuView<'a>],
) -> Vec<(cudoctor_kb::ComputeCapability, Vec<&'g GpuView<'a>>)> {
    let mut by_cc: Vec<(cudoctor_kb::ComputeCapability, Vec<&GpuView>)> = Vec::new();
    for g in gpus {
        let Some(cc) = g.cc else { continue };
        match by_cc.iter_mut().find(|(c, _)| *c == cc) {
            Some((_, list)) => list.push(g),
            None => by_cc.push((cc, vec![g])),
        }
    }
    by_cc
}

/// Whether the library is an extension this rule judges. torch's own libraries are KRN001's;
/// libraries without device code are not extensions; bitsandbytes' builds for other CUDA
/// releases and a package's builds for another torch release or CUDA major beside the one for
/// torch's (`crate::variants`) are never loaded; a stale JIT build is KRN006's; cuFFT's fat binary is a stub.
fn is_judged_extension(
    ctx: &Context,
    lib: &cudoctor_snapshot::LibraryImages,
    torches: &[&cudoctor_snapshot::TorchBuild],
    unloaded: &[&str],
) -> bool {
    !(lib.error.is_some()
        || (lib.sass.is_empty() && lib.ptx.is_empty())
        || torches.iter().any(|t| t.owns(&lib.path))
        || unloaded.contains(&lib.path.as_str())
        || ctx.is_stale_jit_build(&lib.path)
        || cudoctor_fatbin::outside::kernels_outside_fat_binary(&lib.path).is_some())
}

impl Judging<'_> {
    /// The library on the GPUs of one compute capability: nothing where it runs natively,
    /// information for a backend its package can do without, otherwise a warning or an error
    /// with the fix.
    fn judge(
        &self,
        lib: &cudoctor_snapshot::LibraryImages,
        cc: cudoctor_kb::ComputeCapability,
        group: &[&GpuView],
        found: &mut Judged,
    ) {
        let verdict = library_verdict(lib, cc, self.driver_cuda);
        let binary = self.ctx.found_binary(&lib.path);
        let label = binary.map(cudoctor_snapshot::FoundBinary::label);
        let package = label
            .as_deref()
            .or(lib.package.as_deref())
            .unwrap_or("the extension");
        if self.backend_beside_running_module(lib, cc, &verdict, package, found) {
            return;
        }
        // An architecture-specific backend its package loads only where it has code.
        match (&lib.loaded_if, &verdict) {
            (Some(c), Verdict::NoImage) => {
                optional_backend(&mut found.out, &mut found.keys, lib, c, package, group, cc);
                return;
            }
            (Some(c), Verdict::PtxJit { via }) => {
                optional_backend_through_jit(lib, c, via, package, group, cc, found);
                return;
            }
            _ => {}
        }
        let Some((severity, title, cause)) =
            verdict_judgement(&verdict, lib, package, &group_label(group, cc), cc)
        else {
            return;
        };
        let f = gpu_finding(group, cc, lib, severity, title, cause);
        let key = (lib.package.clone().unwrap_or_else(|| lib.path.clone()), cc);
        if let Some(k) = found.keys.iter().position(|k| *k == key) {
            // Another library of the same package on the same GPUs: one finding lists both.
            let first = &mut found.out[k];
            first.evidence.extend(f.evidence.into_iter().skip(1));
            first.severity = first.severity.min(f.severity);
            return;
        }
        let f = self.with_subject(f, lib);
        let f = self.with_fix(f, lib, package, binary, cc);
        found.keys.push(key);
        found.out.push(f);
    }

    /// Whether the library is a module built for one architecture only (`sm_100a` cubins, no
    /// PTX) beside a module of the same package that runs here: the package dispatches by
    /// architecture (sgl-flash-mla's cuda.abi3.so for SM100, its _C_legacy for SM90), so it
    /// is information (recorded once), not an error.
    fn backend_beside_running_module(
        &self,
        lib: &cudoctor_snapshot::LibraryImages,
        cc: cudoctor_kb::ComputeCapability,
        verdict: &Verdict,
        package: &str,
        found: &mut Judged,
    ) -> bool {
        if !(lib.loaded_if.is_none()
            && matches!(verdict, Verdict::NoImage)
            && arch_specific_only(lib))
        {
            return false;
        }
        let Some(other) = self.images.libraries.iter().find(|o| {
            o.path != lib.path
                && o.error.is_none()
                && o.package.is_some()
                && o.package == lib.package
                && matches!(
                    library_verdict(o, cc, self.driver_cuda),
                    Verdict::Native { .. }
                )
        }) else {
            return false;
        };
        let key = (format!("{}\u{0}arch", lib.path), cc);
        if !found.keys.contains(&key) {
            let module = lib.path.rsplit('/').next().unwrap_or(&lib.path);
            found.out.push(
                Finding::new(
                    &RULE,
                    format!("This backend of {package} ({module}) is unavailable on {}: it carries code for other GPUs only", cc.sm()),
                )
                .severity(Severity::Info)
                .evidence(format!("{}: SASS {} PTX {}", lib.path, list(&lib.sass), list(&lib.ptx)))
                .evidence(format!("{}: SASS {} PTX {} (runs on {})", other.path, list(&other.sass), list(&other.ptx), cc.sm()))
                .cause(format!("{package} builds this module for {} only, beside a module that runs on {}: it picks its kernels by architecture, so nothing is broken.", list(&lib.sass), cc.sm())),
            );
            found.keys.push(key);
        }
        true
    }

    /// The finding about the package: the environment's package it names, when known.
    fn with_subject(&self, f: Finding, lib: &cudoctor_snapshot::LibraryImages) -> Finding {
        if let Some(s) = self.ctx.package_subject(&lib.path) {
            f.about(s)
        } else if let (Some(env), Some(p)) = (self.ctx.env_of_path(&lib.path), &lib.package) {
            f.about(crate::Subject::Package {
                env: env.prefix.clone(),
                name: p.clone(),
            })
        } else {
            f
        }
    }

    /// The fix, which depends on who built the library: a framework's prebuilt wheel, NVIDIA's
    /// prebuilt library, a binary built outside the site directories, or a package rebuilt from
    /// source for every GPU here.
    fn with_fix(
        &self,
        f: Finding,
        lib: &cudoctor_snapshot::LibraryImages,
        package: &str,
        binary: Option<&cudoctor_snapshot::FoundBinary>,
        cc: cudoctor_kb::ComputeCapability,
    ) -> Finding {
        let framework = self.ctx.frameworks().into_iter().find(|v| {
            v.build.framework != cudoctor_snapshot::Framework::Torch
                && v.build.ships.contains(&lib.path)
        });
        if let Some(v) = framework {
            // A framework's prebuilt wheel: its build is the framework's own, not pip's.
            f.prose(format!(
                "{} is {}'s prebuilt build ({} {}): install a release or build of {} whose libraries carry {} (check it with `cudoctor kernels` before relying on it), or run it on a GPU it has code for",
                v.build.package,
                v.build.framework.name(),
                v.build.package,
                v.build.version,
                v.build.framework.name(),
                cc.sm()
            ))
        } else if package.starts_with("nvidia-") {
            // NVIDIA's prebuilt libraries come with torch's CUDA; nobody rebuilds them.
            f.prose(format!(
                "{package} is NVIDIA's prebuilt library of torch's CUDA: a torch CUDA variant whose libraries support {} brings a build that does (cudoctor plan names one)",
                cc.sm()
            ))
        } else if let Some(b) = binary {
            let target = b
                .env_prefix
                .as_deref()
                .and_then(|p| self.ctx.env_at(p))
                .map(crate::context::target_env);
            f.steps(found_binary_fix(b, &self.all_ccs, target.as_ref()))
        } else if let Some(fix) = rebuild_fix(self.ctx, lib, &self.all_ccs) {
            f.steps([fix])
        } else {
            f
        }
    }
}

/// An optional backend that another of the package's modules stands in for: its PTX JIT is
/// worth knowing, not a warning (vLLM's FA2 module on a Hopper, where vLLM takes its FA3 one).
fn optional_backend_through_jit(
    lib: &cudoctor_snapshot::LibraryImages,
    c: &cudoctor_snapshot::ConditionalLoad,
    via: &str,
    package: &str,
    group: &[&GpuView],
    cc: cudoctor_kb::ComputeCapability,
    found: &mut Judged,
) {
    let gpus_label = group_label(group, cc);
    let f = Finding::new(
        &RULE,
        format!(
            "This backend of {package} ({}) runs on {gpus_label} only through PTX JIT ({via})",
            c.module
        ),
    )
    .severity(Severity::Info)
    .evidence(format!("{}: SASS {} PTX {}", lib.path, list(&lib.sass), list(&lib.ptx)))
    .evidence(format!("{}: {} {}", c.at, c.module, c.how.describe()))
    .cause(format!("{package} imports this module only where it loads and has other backends; if it is used on {}, its kernels are compiled by the driver at first launch.", cc.sm()));
    found.out.push(f);
    found.keys.push((format!("{}\u{0}jit", lib.path), cc));
}

/// The severity, title and cause of a library without machine code for the GPUs; `None` where
/// it runs natively.
fn verdict_judgement(
    verdict: &Verdict,
    lib: &cudoctor_snapshot::LibraryImages,
    package: &str,
    gpus_label: &str,
    cc: cudoctor_kb::ComputeCapability,
) -> Option<(Severity, String, String)> {
    Some(match verdict {
        Verdict::Native { .. } => return None,
        Verdict::PtxJit { via } => (
            Severity::Warning,
            format!("{package} runs on {gpus_label} only through PTX JIT ({via})"),
            "No machine code for this GPU: its kernels are compiled by the driver at first launch (slow start) and fail with a driver older than the PTX.".to_string(),
        ),
        Verdict::PtxTooNewForDriver { via, needs_cuda, .. } => (
            Severity::Error,
            format!("{package} has only PTX for {gpus_label}, too new for the driver"),
            format!("Its PTX {via} needs a driver for CUDA {needs_cuda}: launching fails with \"the provided PTX was compiled with an unsupported toolchain\"."),
        ),
        Verdict::NoImage => (
            Severity::Error,
            format!("{package} has no kernel image for {gpus_label}"),
            format!("The library carries code for {} only: its kernels fail on {} with \"no kernel image is available for execution on the device\" (or \"invalid device function\").", lib.sass.iter().chain(&lib.ptx).cloned().collect::<Vec<_>>().join(" "), cc.sm()),
        ),
    })
}

/// The finding about the library on the GPUs of one compute capability: the GPUs first, then
/// the library's images (a later library of the same package adds its own after them).
fn gpu_finding(
    group: &[&GpuView],
    cc: cudoctor_kb::ComputeCapability,
    lib: &cudoctor_snapshot::LibraryImages,
    severity: Severity,
    title: String,
    cause: String,
) -> Finding {
    let indices: Vec<String> = group.iter().map(|g| g.gpu.index.to_string()).collect();
    let names: Vec<&str> = {
        let mut n: Vec<&str> = group.iter().map(|g| g.gpu.name.as_str()).collect();
        n.dedup();
        n
    };
    Finding::new(&RULE, title)
        .severity(severity)
        .evidence(format!(
            "GPU{} {} ({}, {}; compute capability from {})",
            if indices.len() > 1 { "s" } else { "" },
            indices.join(", "),
            names.join(", "),
            cc.sm(),
            group.first().map(|g| g.cc_source).unwrap_or("driver")
        ))
        .evidence(format!(
            "{}: SASS {} PTX {}",
            lib.path,
            list(&lib.sass),
            list(&lib.ptx)
        ))
        .cause(cause)
}

/// The information that an optional backend of `package` (an architecture-specific module its
/// Python source imports conditionally) is unavailable on `cc`: one finding per package and
/// compute capability, each module with the import that shows it is optional.
fn optional_backend(
    out: &mut Vec<Finding>,
    keys: &mut Vec<(String, cudoctor_kb::ComputeCapability)>,
    lib: &cudoctor_snapshot::LibraryImages,
    c: &cudoctor_snapshot::ConditionalLoad,
    package: &str,
    group: &[&GpuView],
    cc: cudoctor_kb::ComputeCapability,
) {
    let evidence = [
        format!(
            "{}: SASS {} PTX {}",
            lib.path,
            list(&lib.sass),
            list(&lib.ptx)
        ),
        format!("{}: {} {}", c.at, c.module, c.how.describe()),
    ];
    let key = (
        format!(
            "{}\u{0}optional",
            lib.package.clone().unwrap_or_else(|| lib.path.clone())
        ),
        cc,
    );
    if let Some(k) = keys.iter().position(|k| *k == key) {
        let f = &mut out[k];
        f.evidence.extend(evidence);
        let n = f.evidence.len() / 2;
        f.title = format!(
            "{n} optional backends of {package} are unavailable on {} (they carry code for other GPUs only)",
            cc.sm()
        );
        return;
    }
    let mut f = Finding::new(
        &RULE,
        format!(
            "This backend of {package} ({}) is unavailable on {}: it carries code for other GPUs only",
            c.module,
            cc.sm()
        ),
    )
    .severity(Severity::Info)
    .evidence(format!(
        "{} ({})",
        group_label(group, cc),
        group.first().map(|g| g.cc_source).unwrap_or("driver")
    ));
    f.evidence.extend(evidence);
    f = f.cause(format!(
        "{package} builds these modules only for one architecture family ({}) and imports them only where they load, so on {} it uses its other backends: nothing is broken.",
        list(&lib.sass),
        cc.sm()
    ));
    keys.push(key);
    out.push(f);
}

/// Machine code for architecture-specific targets only (`sm_90a`, `sm_100a`) and no PTX: a
/// module that runs on those exact architectures and nowhere else.
fn arch_specific_only(lib: &cudoctor_snapshot::LibraryImages) -> bool {
    !lib.sass.is_empty() && lib.ptx.is_empty() && lib.sass.iter().all(|s| s.ends_with('a'))
}

/// "GPU 0 (NVIDIA H200, sm_90)", or for several GPUs of one compute capability
/// "GPUs 0, 1 (NVIDIA H200, sm_90)".
fn group_label(group: &[&GpuView], cc: cudoctor_kb::ComputeCapability) -> String {
    match group {
        [one] => one.label(),
        _ => {
            let indices: Vec<String> = group.iter().map(|g| g.gpu.index.to_string()).collect();
            let mut names: Vec<&str> = group.iter().map(|g| g.gpu.name.as_str()).collect();
            names.dedup();
            format!(
                "GPUs {} ({}, {})",
                indices.join(", "),
                names.join(", "),
                cc.sm()
            )
        }
    }
}

/// The source build of the library's package for every GPU of the machine, in the environment
/// that holds it. flash-attn's setup takes its architectures from FLASH_ATTN_CUDA_ARCHS (only
/// 80, 90, 100 and 120: code for x.0 runs on every x.y) and downloads a prebuilt wheel unless
/// FLASH_ATTENTION_FORCE_BUILD=TRUE; other extensions take TORCH_CUDA_ARCH_LIST.
fn rebuild_fix(
    ctx: &Context,
    lib: &cudoctor_snapshot::LibraryImages,
    ccs: &[cudoctor_kb::ComputeCapability],
) -> Option<FixStep> {
    let pkg = lib.package.as_deref()?;
    let target = ctx
        .env_of_path(&lib.path)
        .map(crate::context::target_env)
        .unwrap_or_else(|| cudoctor_plan::TargetEnv {
            python: "python".into(),
            ..Default::default()
        });
    let project = cudoctor_types::without_cuda_variant(pkg);
    if project != pkg {
        // A project published as one wheel per CUDA release (spconv-cu126): the variant has no
        // source distribution to rebuild; its project's source does, or a newer variant.
        return Some(FixStep::Prose(format!(
            "{pkg} is {project}'s prebuilt wheel for one CUDA release: install {project}'s build for a CUDA release whose code includes {} (check it with `cudoctor kernels` before relying on it), or build {project} from source with TORCH_CUDA_ARCH_LIST=\"{}\" after uninstalling {pkg}",
            ccs.iter().map(|c| c.sm()).collect::<Vec<_>>().join(", "),
            arch_list(ccs)
        )));
    }
    if ctx
        .env_of_path(&lib.path)
        .is_some_and(|e| e.torch.is_none())
    {
        // Not a torch extension (xgboost, catboost...): TORCH_CUDA_ARCH_LIST means nothing to
        // its build.
        return Some(FixStep::Prose(format!(
            "Install a release or build of {pkg} whose code includes {} (check it with `cudoctor kernels` before relying on it), or run it on a GPU it has code for",
            ccs.iter().map(|c| c.sm()).collect::<Vec<_>>().join(", ")
        )));
    }
    let rebuild = target.install(&cudoctor_plan::Install::rebuild(pkg));
    if pkg == "flash-attn" {
        let mut archs: Vec<&str> = ccs
            .iter()
            .filter_map(|cc| match cc.major {
                8 => Some("80"),
                9 => Some("90"),
                10 => Some("100"),
                12 => Some("120"),
                _ => None,
            })
            .collect();
        archs.dedup();
        if archs.is_empty() {
            return Some(FixStep::Prose(format!(
                "flash-attn's source build targets sm_80, sm_90, sm_100 and sm_120 only: no build of it runs on {}",
                ccs.iter().map(|c| c.sm()).collect::<Vec<_>>().join(", ")
            )));
        }
        return Some(FixStep::Shell(format!(
            "FLASH_ATTENTION_FORCE_BUILD=TRUE FLASH_ATTN_CUDA_ARCHS=\"{}\" MAX_JOBS=4 {rebuild}   # rebuild for every GPU here",
            archs.join(";")
        )));
    }
    Some(FixStep::Shell(format!(
        "TORCH_CUDA_ARCH_LIST=\"{}\" MAX_JOBS=4 {rebuild}   # rebuild for every GPU here",
        arch_list(ccs)
    )))
}

/// `8.0;9.0`: the GPUs' architectures as `TORCH_CUDA_ARCH_LIST` names them.
fn arch_list(ccs: &[cudoctor_kb::ComputeCapability]) -> String {
    ccs.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(";")
}

/// The rebuild of a CUDA binary found outside the site directories' packages, where it was
/// built: a JIT build's directory removed (torch builds it again at the next load, with the
/// architectures `TORCH_CUDA_ARCH_LIST` names), an editable or in-place build rebuilt in its
/// source tree.
fn found_binary_fix(
    b: &cudoctor_snapshot::FoundBinary,
    ccs: &[cudoctor_kb::ComputeCapability],
    target: Option<&cudoctor_plan::TargetEnv>,
) -> Vec<FixStep> {
    use cudoctor_plan::quote;
    use cudoctor_snapshot::BinaryOrigin;
    let archs = arch_list(ccs);
    match &b.origin {
        BinaryOrigin::TorchExtensionCache { build_dir, name, .. } => vec![
            FixStep::Shell(format!(
                "rm -rf {}   # the build of {name} without these GPUs; torch builds it again at the next load",
                quote(build_dir)
            )),
            FixStep::Prose(format!(
                "Run the program that builds {name} with TORCH_CUDA_ARCH_LIST=\"{archs}\" in its environment (torch's JIT build reads it; unset, it targets the GPUs visible at build time only)"
            )),
        ],
        BinaryOrigin::Editable { source, .. } => {
            let default = cudoctor_plan::TargetEnv {
                python: "python".into(),
                ..Default::default()
            };
            let install = cudoctor_plan::install::install(
                target.unwrap_or(&default),
                &[
                    "--no-build-isolation".into(),
                    "--no-deps".into(),
                    "-e".into(),
                    source.clone(),
                ],
            );
            vec![FixStep::Shell(format!(
                "TORCH_CUDA_ARCH_LIST=\"{archs}\" {install}   # rebuild the editable install for every GPU here"
            ))]
        }
        BinaryOrigin::PythonPath { entry: root } | BinaryOrigin::Project { root } => {
            vec![FixStep::Prose(format!(
                "Rebuild {} in {} with TORCH_CUDA_ARCH_LIST=\"{archs}\" set, the way it was built (e.g. `TORCH_CUDA_ARCH_LIST=\"{archs}\" python setup.py build_ext --inplace` in its project)",
                b.path,
                quote(root)
            ))]
        }
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{KernelImages, LibraryImages, Snapshot};

    #[test]
    fn an_optional_hopper_backend_is_information_and_the_core_module_stays_an_error() {
        // vLLM 0.33.0's FA3 module (sm_90a only, imported inside try/except) and a core module
        // built for sm_90a alone, on an A100.
        let mut s = h200();
        for g in &mut s.driver.gpus {
            g.compute_capability = Some("8.0".into());
            g.name = "NVIDIA A100-SXM4-80GB".into();
        }
        let sp = "/opt/venv/lib/python3.12/site-packages";
        let lib = |name: &str, optional: bool| LibraryImages {
            path: format!("{sp}/vllm/{name}.abi3.so"),
            package: Some("vllm".into()),
            sass: vec!["sm_90a".into()],
            loaded_if: optional.then(|| cudoctor_snapshot::ConditionalLoad {
                module: format!("vllm.{name}"),
                how: cudoctor_snapshot::LoadCondition::TryImport,
                at: "vllm/vllm_flash_attn/flash_attn_interface.py:23".into(),
            }),
            ..Default::default()
        };
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![lib("_vllm_fa3_C", true)],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].title
                .contains("(vllm._vllm_fa3_C) is unavailable on sm_80"),
            "{}",
            f[0].title
        );
        assert!(f[0].fix.is_empty());
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("flash_attn_interface.py:23") && e.contains("try/except")));
        // vLLM's FA2 module (sm_80 and its PTX), optional too, on a Hopper: information.
        let mut h = h200();
        h.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                sass: vec!["sm_80".into()],
                ptx: vec!["compute_80".into()],
                ..lib("_vllm_fa2_C", true)
            }],
        });
        let g = run(&RULE, &h);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].severity, Severity::Info);
        assert!(
            g[0].title.contains("only through PTX JIT"),
            "{}",
            g[0].title
        );
        s.kernel_images
            .as_mut()
            .unwrap()
            .libraries
            .push(lib("_C", false));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().any(|f| f.severity == Severity::Error
            && f.evidence.iter().any(|e| e.contains("vllm/_C.abi3.so"))));
    }

    #[test]
    fn an_extension_built_for_ampere_only_fails_on_hopper() {
        let mut s = h200();
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![
                LibraryImages {
                    path: "/opt/venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so".into(),
                    package: Some("flash-attn".into()),
                    sass: vec!["sm_80".into(), "sm_86".into()],
                    ..Default::default()
                },
                LibraryImages {
                    path: "/opt/venv/lib/python3.12/site-packages/xformers/_C.so".into(),
                    package: Some("xformers".into()),
                    sass: vec!["sm_80".into(), "sm_90".into()],
                    ..Default::default()
                },
            ],
        });
        let f = run(&RULE, &s);
        // Both H200s lack it: one finding naming both, not one per GPU.
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.contains("flash-attn"));
        assert!(
            f[0].title.contains("GPUs 0, 1 (NVIDIA H200, sm_90)"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].evidence[0].starts_with("GPUs 0, 1 (NVIDIA H200, sm_90;"),
            "{:?}",
            f[0].evidence
        );
        assert_eq!(
            f[0].fix[0],
            "FLASH_ATTENTION_FORCE_BUILD=TRUE FLASH_ATTN_CUDA_ARCHS=\"90\" MAX_JOBS=4 /opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn   # rebuild for every GPU here"
        );
    }

    /// bitsandbytes 0.50.2's wheel: the CUDA-12.6 build has no Blackwell code, the CUDA-13.0
    /// one has (their SASS as `cudoctor kernels` reads the real wheel's files).
    fn blackwell_with_bitsandbytes() -> Snapshot {
        let mut s = machine(
            Some(("580.95.05", "13.0")),
            &[("NVIDIA GeForce RTX 5090", "12.0")],
        );
        s.python_envs.push(torch_env(
            "/opt/venv",
            "2.11.0+cu130",
            Some("13.0"),
            &[("bitsandbytes", "0.50.2")],
        ));
        let lib = |cuda: &str, sass: &[&str]| LibraryImages {
            path: format!(
                "/opt/venv/lib/python3.12/site-packages/bitsandbytes/libbitsandbytes_cuda{cuda}.so"
            ),
            package: Some("bitsandbytes".into()),
            sass: sass.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![
                lib(
                    "126",
                    &[
                        "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90",
                    ],
                ),
                lib(
                    "130",
                    &[
                        "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120",
                    ],
                ),
            ],
        });
        s
    }

    #[test]
    fn bitsandbytes_builds_for_another_cuda_are_never_loaded() {
        let f = run(&RULE, &blackwell_with_bitsandbytes());
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn bitsandbytes_cuda_version_loads_the_library_it_names() {
        let mut s = blackwell_with_bitsandbytes();
        s.env.insert("BNB_CUDA_VERSION".into(), "126".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].evidence[1].contains("libbitsandbytes_cuda126.so"),
            "{:?}",
            f[0].evidence
        );
    }

    #[test]
    fn other_extensions_are_rebuilt_with_torch_cuda_arch_list() {
        let mut s = machine(
            Some(("580.159.04", "13.0")),
            &[("NVIDIA H200", "9.0"), ("NVIDIA GeForce RTX 3090", "8.6")],
        );
        s.python_envs
            .push(torch_env("/opt/venv", "2.11.0+cu130", Some("13.0"), &[]));
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                path: "/opt/venv/lib/python3.12/site-packages/xformers/_C.so".into(),
                package: Some("xformers".into()),
                sass: vec!["sm_80".into()],
                ..Default::default()
            }],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "sm_80 runs on the 3090: {f:?}");
        assert!(
            f[0].title.contains("GPU 0 (NVIDIA H200, sm_90)"),
            "{}",
            f[0].title
        );
        assert_eq!(
            f[0].fix[0],
            "TORCH_CUDA_ARCH_LIST=\"8.6;9.0\" MAX_JOBS=4 /opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary xformers --no-cache-dir xformers   # rebuild for every GPU here"
        );
    }

    #[test]
    fn a_wheel_built_for_one_cuda_release_is_named_and_not_rebuilt_under_its_variant_name() {
        // spconv-cu126 2.3.8's core_cc module (its images as cuobjdump lists the real wheel's
        // file) on an RTX 5090: SASS up to sm_90 and PTX compute_90, so it runs through PTX JIT.
        let mut s = machine(
            Some(("580.95.05", "13.0")),
            &[("NVIDIA GeForce RTX 5090", "12.0")],
        );
        s.python_envs.push(torch_env(
            "/opt/venv",
            "2.15.0+cu132",
            Some("13.2"),
            &[("spconv-cu126", "2.3.8")],
        ));
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                path: "/opt/venv/lib/python3.12/site-packages/spconv/core_cc.cpython-312-x86_64-linux-gnu.so".into(),
                package: Some("spconv-cu126".into()),
                sass: ["sm_50", "sm_52", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]
                    .iter().map(|a| a.to_string()).collect(),
                ptx: vec!["compute_52".into(), "compute_90".into()],
                ..Default::default()
            }],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].title.starts_with("spconv-cu126 runs on GPU 0"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].title.contains("only through PTX JIT (compute_90)"),
            "{}",
            f[0].title
        );
        // No `--no-binary spconv-cu126`: that project publishes wheels only.
        assert!(
            !f[0].fix.iter().any(|l| l.contains("--no-binary")),
            "{:?}",
            f[0].fix
        );
        assert!(
            f[0].fix[0].contains("spconv's build for a CUDA release whose code includes sm_120"),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn a_module_for_one_architecture_beside_one_that_runs_is_a_backend_not_an_error() {
        // sgl-flash-mla 1.0.0 (its images as cuobjdump lists the real wheel's files): cuda.abi3.so
        // for SM100 only, _C_legacy.abi3.so also for SM90 (its _loader.py loads both).
        let sp = "/opt/venv/lib/python3.12/site-packages";
        let lib = |name: &str, sass: &[&str]| LibraryImages {
            path: format!("{sp}/flash_mla/{name}.abi3.so"),
            package: Some("sgl-flash-mla".into()),
            sass: sass.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        let images = KernelImages {
            scope: "test".into(),
            libraries: vec![
                lib("_C_legacy", &["sm_100a", "sm_103a", "sm_107a", "sm_90a"]),
                lib("cuda", &["sm_100a", "sm_103a", "sm_107a"]),
            ],
        };
        let mut s = h200();
        s.kernel_images = Some(images.clone());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].title
                .contains("(cuda.abi3.so) is unavailable on sm_90"),
            "{}",
            f[0].title
        );
        // On an A100 neither module runs: the package cannot run there.
        let mut a = h200();
        for g in &mut a.driver.gpus {
            g.compute_capability = Some("8.0".into());
        }
        a.kernel_images = Some(images);
        let f = run(&RULE, &a);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn packages_named_like_torch_are_extensions_too() {
        let mut s = h200();
        let torch_dir = s.python_envs[0].torch.as_ref().unwrap().path.clone();
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                path: format!("{torch_dir}_scatter/_scatter_cuda.so"),
                package: Some("torch-scatter".into()),
                sass: vec!["sm_80".into()],
                ..Default::default()
            }],
        });
        assert_eq!(run(&RULE, &s).len(), 1, "torch_scatter is not torch");
    }
}
