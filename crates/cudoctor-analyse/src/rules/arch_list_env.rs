use cudoctor_fatbin::compat::parse_torch_arch_list;

use crate::context::library_verdict;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN003",
    name: "arch-list-env",
    layer: Layer::Kernels,
    severity: Severity::Warning,
    summary: "TORCH_CUDA_ARCH_LIST misses a present GPU, has invalid items, or names archs nvcc cannot target",
    docs: r#"## What it checks
The TORCH_CUDA_ARCH_LIST environment variable, read the way torch.utils.cpp_extension reads it
(named architectures such as "Ampere" expanded, `X.Y`, `X.Ya`, `+PTX`), against the GPUs present
and the range of architectures the selected nvcc can compile for.

## Why it matters
Extensions built now (flash-attn, DeepSpeed ops, apex, custom ops) get exactly these
architectures. A list without a GPU here builds an extension that fails on it with "no kernel
image is available"; an item nvcc does not know stops the build with "nvcc fatal: Unsupported
gpu architecture 'compute_120'".

## How to fix
Set it to the compute capabilities of the GPUs you run on (the report prints the line), within
what your nvcc supports.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(list) = ctx.var("TORCH_CUDA_ARCH_LIST") else {
        return Vec::new();
    };
    let req = parse_torch_arch_list(list);
    let images = cudoctor_snapshot::LibraryImages {
        sass: req.sass.iter().map(|a| a.name()).collect(),
        ptx: req.ptx.iter().map(|a| a.name()).collect(),
        ..Default::default()
    };
    let mut problems = Vec::new();
    let mut ccs: Vec<String> = Vec::new();
    for g in ctx.gpus() {
        let Some(cc) = g.cc else { continue };
        if !ccs.contains(&cc.to_string()) {
            ccs.push(cc.to_string());
        }
        if !library_verdict(&images, cc, None).runs() {
            problems.push(format!("{} is not covered", g.label()));
        }
    }
    if !req.invalid.is_empty() {
        problems.push(format!(
            "items torch does not understand: {}",
            req.invalid.join(", ")
        ));
    }
    let nvcc = ctx.build_toolkit().and_then(|b| b.cuda());
    // A toolkit newer than the table's rows keeps its major's removals: NVIDIA has not brought
    // back an architecture it dropped within a major. Only `lowest` is carried over, and the
    // finding then says it is inferred.
    let mut inferred_from = None;
    let range = nvcc.and_then(|v| {
        ctx.kb.nvcc_arch_range(v).or_else(|| {
            let older = ctx
                .kb
                .nvcc_ranges()
                .iter()
                .filter(|r| r.to.major == v.major && r.to < v && r.lowest.is_some())
                .max_by_key(|r| r.to)?;
            inferred_from = Some(older.to);
            Some(older)
        })
    });
    // An architecture the selected nvcc cannot target (known, not guessed).
    let beyond_nvcc = |a: &cudoctor_fatbin::Arch| {
        let Some(range) = range else { return false };
        let cc = a.compute_capability();
        let below = range.lowest.is_some_and(|low| cc < low);
        let verdict = if inferred_from.is_some() {
            below.then_some(false)
        } else {
            range.can_target(cc)
        };
        verdict == Some(false)
    };
    let mut outside = false;
    for a in req.sass.iter().filter(|a| beyond_nvcc(a)) {
        outside = true;
        problems.push(format!(
            "{} is outside what nvcc {} can target",
            a.name(),
            nvcc.map(|v| v.to_string()).unwrap_or_default()
        ));
    }
    if problems.is_empty() {
        return Vec::new();
    }
    if let (true, Some(row), Some(v)) = (outside, inferred_from, nvcc) {
        problems.push(format!(
            "nvcc {v} is newer than the knowledge base's rows: CUDA {row}'s lowest target is assumed, since architectures removed within a major have not come back"
        ));
    }
    let mut f = Finding::new(&RULE, format!("TORCH_CUDA_ARCH_LIST=\"{list}\" does not fit this machine"))
        .evidence(format!("TORCH_CUDA_ARCH_LIST={list} (builds {})", images.sass.iter().chain(&images.ptx).cloned().collect::<Vec<_>>().join(" ")))
        .cause("Extensions built now target exactly this list: GPUs missing from it get no kernels, and archs nvcc does not know stop the build.");
    for p in problems {
        f = f.evidence(p);
    }
    if !ccs.is_empty() {
        f = f.shell(format!("export TORCH_CUDA_ARCH_LIST=\"{}\"", ccs.join(";")));
    } else {
        // No GPU to build for here: the list as given, without the items that cannot build.
        let kept: Vec<&str> = list
            .split([';', ' '])
            .map(str::trim)
            .filter(|item| {
                let r = parse_torch_arch_list(item);
                !item.is_empty() && r.invalid.is_empty() && !r.sass.iter().any(&beyond_nvcc)
            })
            .collect();
        f = if kept.is_empty() {
            f.prose("Set TORCH_CUDA_ARCH_LIST to the compute capabilities of the GPUs you build for, within what your nvcc can target")
        } else {
            f.shell(format!(
                "export TORCH_CUDA_ARCH_LIST=\"{}\"",
                kept.join(";")
            ))
        };
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn the_real_h200_setting_fits() {
        let mut s = h200();
        s.env.insert("TORCH_CUDA_ARCH_LIST".into(), "9.0a".into());
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_list_without_the_gpu_or_with_garbage() {
        let mut s = h200();
        s.env
            .insert("TORCH_CUDA_ARCH_LIST".into(), "8.0;8.6;banana".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence.iter().any(|e| e.contains("banana")));
        assert_eq!(f[0].fix[0], "export TORCH_CUDA_ARCH_LIST=\"9.0\"");
    }

    #[test]
    fn a_toolkit_newer_than_the_table_keeps_its_majors_removals() {
        let mut s = h200();
        s.toolkit.nvcc_on_path.as_mut().unwrap().version = Some("13.5.37".into());
        for t in &mut s.toolkit.toolkits {
            t.version = Some("13.5.37".into());
        }
        s.env
            .insert("TORCH_CUDA_ARCH_LIST".into(), "7.0;8.0".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].evidence.iter().any(|e| e.contains("sm_70 is outside")),
            "{f:?}"
        );
        assert!(f[0].evidence.iter().any(|e| e.contains("assumed")), "{f:?}");
    }

    #[test]
    fn without_a_gpu_the_fix_keeps_the_items_that_build() {
        let mut s = h200();
        s.driver.gpus.clear();
        s.env.insert(
            "TORCH_CUDA_ARCH_LIST".into(),
            "6.1;8.0 9.0+PTX;banana".into(),
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].fix, ["export TORCH_CUDA_ARCH_LIST=\"8.0;9.0+PTX\""]);
        s.env.insert("TORCH_CUDA_ARCH_LIST".into(), "6.1".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].fix[0].starts_with("Set TORCH_CUDA_ARCH_LIST"), "{f:?}");
    }

    #[test]
    fn an_arch_the_toolkit_cannot_build() {
        let mut s = h200();
        // CUDA 13 dropped Maxwell/Pascal/Volta.
        s.env
            .insert("TORCH_CUDA_ARCH_LIST".into(), "6.1;9.0".into());
        let f = run(&RULE, &s);
        assert!(
            f[0].evidence.iter().any(|e| e.contains("sm_61 is outside")),
            "{f:?}"
        );
    }
}
