//! `cudoctor libs`'s text: the verdict first (how many libraries, which are not found, which
//! objects miss symbols), the environment's directories once as a legend, every object by the
//! stage of a workload that maps it, with who opened it, its version and what each needed
//! library resolved to, and the verdict again last. Markdown: one table per stage.

use std::fmt::Write;

use cudoctor_snapshot::{
    LibraryLinks, LoadStage, LoaderFacts, OpenedBy, Opener, ProcessLinks, RuntimeDir, VersionSource,
};

use cudoctor_analyse::libs::LibsReport;
use cudoctor_snapshot::windows::{Found, LoadFailure, WinPath, WindowsTorchEnv};
use cudoctor_types::inert::{line, markdown_code};

use crate::layout::{demangle, width, wrap, Legend};

/// A framework build besides torch (JAX's plugin, CuPy, ONNX Runtime) and those of its shipped
/// libraries that need a CUDA library or are one.
pub struct FrameworkLibs<'a> {
    /// "onnxruntime 1.23.2 (onnxruntime-gpu) in /venv".
    pub label: String,
    pub objects: Vec<&'a LibraryLinks>,
}

pub fn render_libs_text(facts: &LoaderFacts, frameworks: &[FrameworkLibs]) -> String {
    let legend = legend(facts);
    let verdict = libs_verdict(facts, frameworks);
    let mut out = String::new();
    let _ = writeln!(out, "{}", wrap("", "    ", &verdict, width()));
    let texts: Vec<&str> = facts
        .processes
        .iter()
        .flat_map(|p| {
            std::iter::once(p.env_prefix.as_str())
                .chain(p.objects.iter().flat_map(|o| {
                    std::iter::once(o.path.as_str())
                        .chain(o.needed.iter().filter_map(|n| n.resolved.as_deref()))
                }))
                .chain(p.runtime_dirs.iter().map(|d| d.path.as_str()))
        })
        .chain(frameworks.iter().flat_map(|f| {
            f.objects.iter().flat_map(|o| {
                std::iter::once(o.path.as_str())
                    .chain(o.needed.iter().filter_map(|n| n.resolved.as_deref()))
            })
        }))
        .collect();
    for l in legend.lines(texts.iter().copied()) {
        let _ = writeln!(out, "{l}");
    }
    for p in &facts.processes {
        if !p.env_prefix.is_empty() {
            let _ = writeln!(out, "\n# import torch in {}", legend.shorten(&p.env_prefix));
        }
        let staged = p.objects.iter().any(|o| !o.stage.is_import()) || !p.runtime_dirs.is_empty();
        for (stage, objects, dirs) in by_stage(p) {
            if staged {
                let _ = writeln!(out, "## {}: {}", stage.as_str(), stage.describe());
            }
            objects_text(&mut out, &objects, &legend);
            for d in dirs {
                let text = format!(
                    "{}/  (a location: {})",
                    legend.shorten(&d.path),
                    line(&d.what)
                );
                let _ = writeln!(out, "{}", wrap("", "    ", &text, width()));
            }
        }
        for s in &p.shadowed {
            let line = format!(
                "LD_LIBRARY_PATH shadows {} for {}: {} instead of {}",
                line(&s.name),
                legend.shorten(&s.object),
                legend.shorten(&s.from_ld_library_path),
                s.otherwise
                    .as_deref()
                    .map_or_else(|| "nothing".to_string(), |o| legend.shorten(o))
            );
            let _ = writeln!(out, "{}", wrap("", "    ", &line, width()));
        }
    }
    for f in frameworks {
        let label = legend.shorten(&f.label);
        if f.objects.is_empty() {
            let text = format!("# {label}: none of its shipped libraries links a CUDA library (it opens them at run time)");
            let _ = writeln!(out, "\n{}", wrap("", "    ", &text, width()));
        } else {
            let _ = writeln!(out, "\n# {label}: its shipped libraries");
            objects_text(&mut out, &f.objects, &legend);
        }
    }
    for e in &facts.errors {
        let _ = writeln!(out, "{}", wrap("error: ", "    ", &line(e), width()));
    }
    let _ = writeln!(out, "\n{}", wrap("", "    ", &verdict, width()));
    out
}

/// Each object with who opened it, its version, what each needed library resolved to and the
/// symbols nothing provides (demangled).
fn objects_text(out: &mut String, objects: &[&LibraryLinks], legend: &Legend) {
    for o in objects {
        let _ = writeln!(
            out,
            "{}",
            legend.shorten(&display_path(&o.path, o.real_path.as_deref()))
        );
        if let Some(by) = opener(o) {
            let _ = writeln!(
                out,
                "{}",
                wrap("    opened: ", "        ", &line(&by), width())
            );
        }
        if let Some(v) = version(o) {
            let _ = writeln!(out, "    version: {}", line(&v));
        }
        for n in &o.needed {
            let target = match (&n.resolved, &n.after_import) {
                (Some(r), _) => legend.shorten(&display_path(r, n.real_path.as_deref())),
                (None, Some(a)) => format!(
                    "found only after `import {}` loads {}",
                    a.framework.name(),
                    legend.shorten(&display_path(&a.path, a.real_path.as_deref()))
                ),
                (None, None) => "NOT FOUND".to_string(),
            };
            let name = if n.by_name {
                format!("{} (dlopen)", n.name)
            } else {
                n.name.clone()
            };
            let _ = writeln!(out, "    {:28} {:15} {target}", line(&name), n.via);
        }
        for note in &o.notes {
            let _ = writeln!(
                out,
                "{}",
                wrap("    note: ", "        ", &line(note), width())
            );
        }
        if !o.unresolved_symbols.is_empty() {
            let _ = writeln!(out, "    unresolved symbols:");
            for s in &o.unresolved_symbols {
                let shown = match provider_note(s) {
                    Some(p) => format!("{}  ({p})", demangle(s)),
                    None => demangle(s),
                };
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("      ", "        ", &line(&shown), width())
                );
            }
        }
    }
}

/// The path ld.so records keeps the `..` of `$ORIGIN/../../nvidia/...`; shown without it when
/// the file's real path proves the directory is the textual one (no symlinked component), else
/// as ld.so names it. JSON keeps both names.
fn display_path<'a>(path: &'a str, real_path: Option<&str>) -> std::borrow::Cow<'a, str> {
    if !path.split('/').any(|c| c == ".." || c == ".") {
        return path.into();
    }
    let normal = cudoctor_ldso::rootfs::normalise(path);
    let dir = |p: &str| p.rsplit_once('/').map(|(d, _)| d.to_string());
    match real_path {
        Some(real) if dir(real) == dir(&normal) => normal.into(),
        _ => path.into(),
    }
}

/// "312 libraries, 1 not found: libsox.so.3 (needed by libtorchaudio_sox.so)". Counts distinct
/// resolved files; names each missing library with the object that needs it.
pub fn libs_verdict(facts: &LoaderFacts, frameworks: &[FrameworkLibs]) -> String {
    let objects: Vec<&LibraryLinks> = facts
        .processes
        .iter()
        .flat_map(|p| &p.objects)
        .chain(frameworks.iter().flat_map(|f| f.objects.iter().copied()))
        .collect();
    let mut files: Vec<&str> = objects.iter().map(|o| o.path.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    let mut missing: Vec<String> = Vec::new();
    // Opened by name and found only in a process that ran another framework's import first.
    let mut after: Vec<String> = Vec::new();
    for o in &objects {
        for n in o.needed.iter().filter(|n| n.resolved.is_none()) {
            if let Some(a) = &n.after_import {
                let by = o.path.rsplit('/').next().unwrap_or(&o.path);
                let entry = format!(
                    "{} (opened by name by {by}, after `import {}`)",
                    n.name,
                    a.framework.name()
                );
                if !after.contains(&entry) {
                    after.push(entry);
                }
                continue;
            }
            let by = o.path.rsplit('/').next().unwrap_or(&o.path);
            let optional = if n.optional { ", optional" } else { "" };
            let how = if n.by_name {
                "opened by name by"
            } else {
                "needed by"
            };
            let entry = format!("{} ({how} {by}{optional})", n.name);
            if !missing.contains(&entry) {
                missing.push(entry);
            }
        }
    }
    let unresolved = objects
        .iter()
        .filter(|o| !o.unresolved_symbols.is_empty())
        .count();
    let mut s = format!("{} libraries", files.len());
    if missing.is_empty() {
        s.push_str(", all needed libraries found");
    } else {
        let _ = write!(s, ", {} not found: {}", missing.len(), missing.join(", "));
    }
    if !after.is_empty() {
        let _ = write!(
            s,
            "; {} found only after another framework's import: {}",
            after.len(),
            after.join(", ")
        );
    }
    if unresolved > 0 {
        let _ = write!(s, "; {unresolved} with unresolved symbols");
    }
    if !facts.errors.is_empty() {
        let _ = write!(s, "; {} could not be loaded", facts.errors.len());
    }
    s.push('.');
    s
}

/// `<env>` for each environment a process imports torch in (`<env2>`, ... for more), and its
/// site-packages directory as `<site>`.
fn legend(facts: &LoaderFacts) -> Legend {
    let mut legend = Legend::default();
    let mut n = 0;
    for p in facts.processes.iter().filter(|p| !p.env_prefix.is_empty()) {
        n += 1;
        let suffix = if n == 1 { String::new() } else { n.to_string() };
        legend.add(&format!("<env{suffix}>"), &p.env_prefix);
        let site = p.objects.iter().find_map(|o| {
            let i = o.path.find("/site-packages/")?;
            o.path
                .starts_with(&p.env_prefix)
                .then(|| o.path[..i + "/site-packages".len()].to_string())
        });
        if let Some(site) = site {
            legend.add(&format!("<site{suffix}>"), &site);
        }
    }
    legend
}

/// The objects of one process grouped by the stage that maps them, in the order a workload
/// reaches the stages; stages with nothing new are left out.
fn by_stage(p: &ProcessLinks) -> Vec<(LoadStage, Vec<&LibraryLinks>, Vec<&RuntimeDir>)> {
    LoadStage::ALL
        .into_iter()
        .map(|stage| {
            (
                stage,
                p.objects
                    .iter()
                    .filter(|o| o.stage == stage)
                    .collect::<Vec<_>>(),
                p.runtime_dirs
                    .iter()
                    .filter(|d| d.stage == stage)
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, o, d)| !o.is_empty() || !d.is_empty())
        .collect()
}

/// Who opened an object at run time, in words: `dlopen("libcudnn_graph.so.9") by
/// libcudnn.so.9`; None for what the loader brought in as a dependency.
fn opener(o: &LibraryLinks) -> Option<String> {
    let by = o.opened_by.as_ref()?;
    let what = match by.opener {
        Opener::Interpreter => return None,
        Opener::TorchGlobalDeps => "loaded with RTLD_GLOBAL by torch/__init__.py".to_string(),
        Opener::TorchPreload => "preloaded by path by torch/__init__.py".to_string(),
        Opener::PythonImport => format!("imported ({})", by.by),
        Opener::PackageLoader => format!("loaded by path by {}'s own loader", by.by),
        Opener::LibraryDlopen => format!(
            "dlopen(\"{}\") at run time by {}",
            o.soname.as_deref().unwrap_or(&o.path),
            by.by
        ),
    };
    Some(format!("{what}{}", conditions(by)))
}

fn conditions(by: &OpenedBy) -> &'static str {
    match (by.optional, by.conditional) {
        (true, _) => " (optional)",
        (false, true) => " (only when the work needs it)",
        _ => "",
    }
}

fn version(o: &LibraryLinks) -> Option<String> {
    o.version.as_ref().map(|v| match &v.from {
        VersionSource::FileName => format!("{} (file name)", v.version),
        VersionSource::Wheel { name } => format!("{} (wheel {name})", v.version),
    })
}

/// `cudoctor libs --format markdown`, for pasting into an issue: the verdict, then one table
/// per stage.
pub fn render_libs_markdown(facts: &LoaderFacts, frameworks: &[FrameworkLibs]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}\n",
        cudoctor_types::inert::markdown(&libs_verdict(facts, frameworks))
    );
    for p in &facts.processes {
        let title = if p.env_prefix.is_empty() {
            "Libraries".to_string()
        } else {
            format!("`import torch` in `{}`", p.env_prefix)
        };
        let _ = writeln!(out, "## {title}\n");
        for (stage, objects, dirs) in by_stage(p) {
            let _ = writeln!(out, "### {} ({})\n", stage.as_str(), stage.describe());
            let _ = writeln!(out, "| library | version | opened | missing |");
            let _ = writeln!(out, "| --- | --- | --- | --- |");
            for o in objects {
                let missing: Vec<&str> = o
                    .needed
                    .iter()
                    .filter(|n| n.resolved.is_none())
                    .map(|n| n.name.as_str())
                    .collect();
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    cell(&display_path(&o.path, o.real_path.as_deref())),
                    cell(&version(o).unwrap_or_default()),
                    cell(&opener(o).unwrap_or_else(|| match &o.loaded_by {
                        Some(l) => format!("needed by `{}`", l.rsplit('/').next().unwrap_or(l)),
                        None => String::new(),
                    })),
                    cell(&missing.join(", "))
                );
            }
            for d in dirs {
                let _ = writeln!(out, "| `{}/` | | {} | |", cell(&d.path), cell(&d.what));
            }
            out.push('\n');
        }
        for s in &p.shadowed {
            let _ = writeln!(
                out,
                "- LD_LIBRARY_PATH shadows {} for {}: {} instead of {}",
                markdown_code(&s.name),
                markdown_code(&s.object),
                markdown_code(&s.from_ld_library_path),
                markdown_code(s.otherwise.as_deref().unwrap_or("nothing"))
            );
        }
    }
    for f in frameworks {
        let _ = writeln!(out, "## {}\n", cudoctor_types::inert::markdown(&f.label));
        if f.objects.is_empty() {
            let _ = writeln!(
                out,
                "None of its shipped libraries links a CUDA library (it opens them at run time).\n"
            );
        } else {
            let mut text = String::new();
            objects_text(&mut text, &f.objects, &Legend::default());
            let fence = cudoctor_types::inert::markdown_fence(&text);
            let _ = writeln!(out, "{fence}\n{text}{fence}\n");
        }
    }
    for e in &facts.errors {
        let _ = writeln!(out, "- error: {}", cudoctor_types::inert::markdown(e));
    }
    out
}

/// Who would provide an undefined symbol, as the text report notes it: "driver", "CUDA 12
/// cudart", "torch"; `None` where nothing is known.
fn provider_note(symbol: &str) -> Option<String> {
    use cudoctor_ldso::SymbolProvider as P;
    Some(match P::of(symbol) {
        P::Driver { family } => format!("the driver's lib{}", family.as_str()),
        P::CudaLibrary {
            family,
            major: Some(m),
        } => format!("CUDA {m}'s lib{}", family.as_str()),
        P::CudaLibrary { family, .. } => format!("lib{}", family.as_str()),
        P::Torch => "torch".to_string(),
        P::CxxRuntime { version } => format!("libstdc++ {version}"),
        P::Libc { version } => format!("glibc {version}"),
        P::Python | P::Other => return None,
    })
}

/// The framework builds of a `libs` report as the renderers take them.
fn framework_libs(report: &LibsReport) -> Vec<FrameworkLibs<'_>> {
    report
        .frameworks
        .iter()
        .map(|f| FrameworkLibs {
            label: f.label.clone(),
            objects: f.objects.iter().collect(),
        })
        .collect()
}

/// `cudoctor libs`'s text: the ELF processes and framework builds, then each Windows Python's
/// `import torch` through the DLL search (its verdict first and last where it is the whole).
pub fn render_libs_report_text(report: &LibsReport) -> String {
    let frameworks = framework_libs(report);
    if report.windows.is_empty() {
        return render_libs_text(&report.loader, &frameworks);
    }
    let elf = !report.loader.processes.is_empty()
        || !frameworks.is_empty()
        || !report.loader.errors.is_empty();
    let mut out = if elf {
        render_libs_text(&report.loader, &frameworks)
    } else {
        let verdict = windows_verdict(&report.windows);
        format!("{}\n", wrap("", "    ", &verdict, width()))
    };
    for env in &report.windows {
        let _ = writeln!(
            out,
            "\n# import torch in {} (the Windows DLL search)",
            line(env.python.as_str())
        );
        for m in &env.import.modules {
            let _ = writeln!(out, "{:60} {}", line(m.path.as_str()), found_how(&m.found));
        }
        if let Some((dll, failure)) = &env.import.raised {
            let text = format!(
                "loading {} fails with error {}: {}",
                line(dll.as_str()),
                failure.win32_error(),
                line(&failure_text(failure))
            );
            let _ = writeln!(out, "{}", wrap("FAILS: ", "    ", &text, width()));
        }
    }
    if !elf {
        let verdict = windows_verdict(&report.windows);
        let _ = writeln!(out, "\n{}", wrap("", "    ", &verdict, width()));
    }
    out
}

/// `cudoctor libs --format markdown`.
pub fn render_libs_report_markdown(report: &LibsReport) -> String {
    let frameworks = framework_libs(report);
    let mut out = if report.windows.is_empty() {
        return render_libs_markdown(&report.loader, &frameworks);
    } else if report.loader.processes.is_empty() && frameworks.is_empty() {
        format!(
            "{}\n\n",
            cudoctor_types::inert::markdown(&windows_verdict(&report.windows))
        )
    } else {
        render_libs_markdown(&report.loader, &frameworks)
    };
    for env in &report.windows {
        let _ = writeln!(
            out,
            "## `import torch` in {}\n",
            markdown_code(env.python.as_str())
        );
        let _ = writeln!(out, "| DLL | found |");
        let _ = writeln!(out, "| --- | --- |");
        for m in &env.import.modules {
            let _ = writeln!(
                out,
                "| {} | {} |",
                markdown_code(m.path.as_str()),
                found_how(&m.found)
            );
        }
        if let Some((dll, failure)) = &env.import.raised {
            let _ = writeln!(
                out,
                "\n- loading {} fails with error {}: {}",
                markdown_code(dll.as_str()),
                failure.win32_error(),
                cudoctor_types::inert::markdown(&failure_text(failure))
            );
        }
        out.push('\n');
    }
    out
}

/// `cudoctor libs --format json`: every object of the processes, their run-time directories,
/// the framework builds' libraries, the errors, and each Windows Python's `import torch`.
pub fn render_libs_json(report: &LibsReport) -> serde_json::Value {
    let objects: Vec<&LibraryLinks> = report
        .loader
        .processes
        .iter()
        .flat_map(|p| &p.objects)
        .collect();
    let runtime_dirs: Vec<&RuntimeDir> = report
        .loader
        .processes
        .iter()
        .flat_map(|p| &p.runtime_dirs)
        .collect();
    let frameworks: Vec<serde_json::Value> = report
        .frameworks
        .iter()
        .map(|f| serde_json::json!({ "framework": f.label, "objects": f.objects }))
        .collect();
    let mut doc = serde_json::json!({
        "objects": objects,
        "runtime_dirs": runtime_dirs,
        "frameworks": frameworks,
        "errors": report.loader.errors,
    });
    if !report.windows.is_empty() {
        doc["windows"] = serde_json::json!(report.windows);
    }
    doc
}

/// How the DLL search found a module, in words (`app dir`, `known dll`).
fn found_how(found: &Found) -> String {
    serde_json::to_value(found)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default()
}

fn failure_text(failure: &LoadFailure) -> String {
    let name = |p: &Option<WinPath>| p.as_ref().map(|w| w.file_name().to_string());
    match failure {
        LoadFailure::NotFound {
            name: dll,
            wanted_by,
        } => match name(wanted_by) {
            Some(by) => format!("{dll}, imported by {by}, is in none of the directories searched"),
            None => format!("{dll} is in none of the directories searched"),
        },
        LoadFailure::MissingProcedures {
            dll,
            names,
            wanted_by,
        } => format!(
            "{} does not export {} that {} imports",
            dll.file_name(),
            names.join(", "),
            wanted_by.file_name()
        ),
        LoadFailure::BadImage { path, reason } => {
            format!(
                "{} is not an image this process can map: {reason}",
                path.file_name()
            )
        }
    }
}

/// The Windows imports' verdict: how many DLLs `import torch` maps, and where it fails.
fn windows_verdict(envs: &[WindowsTorchEnv]) -> String {
    let parts: Vec<String> = envs
        .iter()
        .map(|e| {
            let modules = e.import.modules.len();
            match &e.import.raised {
                None => format!("import torch in {} loads {modules} DLLs", e.python),
                Some((dll, f)) => format!(
                    "import torch in {} fails: {} cannot be loaded ({})",
                    e.python,
                    dll.file_name(),
                    failure_text(f)
                ),
            }
        })
        .collect();
    format!("{}.", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::{AfterImport, Framework, LinkedLibrary};

    /// CTranslate2's library, which opens libcublas.so.12 by name: found nowhere, or (with
    /// `after`) only once torch's import has loaded it.
    fn ct2(after: Option<&str>) -> LibraryLinks {
        LibraryLinks {
            path: "/v/site/ctranslate2.libs/libctranslate2.so.4".into(),
            needed: vec![LinkedLibrary {
                name: "libcublas.so.12".into(),
                by_name: true,
                after_import: after.map(|p| AfterImport {
                    framework: Framework::Torch,
                    path: p.into(),
                    real_path: None,
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_library_found_only_after_torchs_import_is_said_so_not_missing() {
        let loaded = "/v/site/nvidia/cublas/lib/libcublas.so.12";
        let o = ct2(Some(loaded));
        let frameworks = [FrameworkLibs {
            label: "CTranslate2 4.8.5 (ctranslate2) in /v".into(),
            objects: vec![&o],
        }];
        let facts = LoaderFacts::default();
        let verdict = libs_verdict(&facts, &frameworks);
        assert_eq!(
            verdict,
            "1 libraries, all needed libraries found; 1 found only after another framework's import: libcublas.so.12 (opened by name by libctranslate2.so.4, after `import torch`)."
        );
        let text = render_libs_text(&facts, &frameworks);
        assert!(
            text.contains(&format!("found only after `import torch` loads {loaded}")),
            "{text}"
        );
        assert!(!text.contains("NOT FOUND"), "{text}");
        // Nothing provides it: still not found.
        let o = ct2(None);
        let frameworks = [FrameworkLibs {
            label: "CTranslate2 4.8.5 (ctranslate2) in /v".into(),
            objects: vec![&o],
        }];
        assert!(libs_verdict(&facts, &frameworks)
            .contains("1 not found: libcublas.so.12 (opened by name by libctranslate2.so.4)"));
        assert!(render_libs_text(&facts, &frameworks).contains("NOT FOUND"));
    }
}
