//! A toolkit's CCCL headers (libcu++'s `nv/target`, thrust, cub), read from its files: where
//! they are, and which of them the toolkit's own `include/cuda_fp16.h` includes (torch's CUDA
//! headers include `cuda_fp16.h`, so every CUDA source of a torch extension needs them).

use cudoctor_snapshot::{CcclHeaders, HeaderInclude};

use crate::host::Host;

/// The header prefixes of CCCL's libraries.
const CCCL_PREFIXES: &[&str] = &["nv/", "cuda/std/", "cuda/", "thrust/", "cub/"];

/// Reads `<root>/include`: `None` when the toolkit has no `include/cuda_runtime_api.h` (a piece
/// of a toolkit, not one a build compiles against).
pub fn read(host: &Host, root: &str) -> Option<CcclHeaders> {
    let include = format!("{root}/include");
    if !host.is_file(&format!("{include}/cuda_runtime_api.h")) {
        return None;
    }
    // CUDA 13 keeps CCCL in include/cccl (nvcc.profile: -isystem $(TOP)/include/cccl); CUDA 12
    // and older in include itself.
    let dir = [format!("{include}/cccl"), include.clone()]
        .into_iter()
        .find(|d| {
            host.exists(&format!("{d}/nv/target")) || host.is_file(&format!("{d}/thrust/version.h"))
        });
    let file = format!("{include}/cuda_fp16.h");
    let needed_by = host
        .read_text(&file)
        .ok()
        .and_then(|text| first_cccl_include(&text))
        .map(|(line, header)| HeaderInclude { file, line, header });
    Some(CcclHeaders { dir, needed_by })
}

/// The first `#include <...>` of a CCCL header in a header's text: (line, header).
pub fn first_cccl_include(text: &str) -> Option<(u32, String)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let rest = l.trim_start().strip_prefix('#')?.trim_start();
        let rest = rest.strip_prefix("include")?.trim_start();
        let header = rest.strip_prefix('<')?.split('>').next()?;
        CCCL_PREFIXES
            .iter()
            .any(|p| header.starts_with(p))
            .then(|| (i as u32 + 1, header.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cccl_include_is_found_with_its_line() {
        let text = "#ifndef X\n#include \"cuda_fp16.hpp\"\n#  include <utility>\n#include <nv/target>\n#include <cuda/std/type_traits>\n";
        assert_eq!(first_cccl_include(text), Some((4, "nv/target".to_string())));
        assert_eq!(first_cccl_include("#include <cuda_runtime.h>\n"), None);
    }

    #[test]
    fn a_pip_toolkit_without_the_cccl_wheel_has_no_cccl_directory() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("nvidia/cu13");
        std::fs::create_dir_all(real.join("include/cccl/nv")).unwrap();
        std::fs::write(real.join("include/cuda_runtime_api.h"), "").unwrap();
        std::fs::write(
            real.join("include/cuda_fp16.h"),
            "/* x */\n#include <nv/target>\n",
        )
        .unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            std::collections::BTreeMap::new(),
            std::time::Duration::from_secs(5),
        );
        let root = "/nvidia/cu13";
        let facts = read(&host, root).expect("a toolkit with runtime headers");
        assert_eq!(facts.dir, None);
        let need = facts.needed_by.expect("cuda_fp16.h's include");
        assert_eq!((need.line, need.header.as_str()), (2, "nv/target"));
        // The cccl wheel's layout: include/cccl/nv/target.
        std::fs::write(real.join("include/cccl/nv/target"), "").unwrap();
        assert_eq!(
            read(&host, root).unwrap().dir.as_deref(),
            Some(format!("{root}/include/cccl").as_str())
        );
        // No runtime headers: no facts.
        std::fs::remove_file(real.join("include/cuda_runtime_api.h")).unwrap();
        assert!(read(&host, root).is_none());
    }
}
