//! The PE reader on real files: DLLs and an extension module of torch 2.15.0's Windows wheel
//! (CPU build, win_amd64), each beside what binutils' objdump printed of it
//! (`scripts/windows/objdump-tables.sh`), a DLL linked by lld-link with a delay-load import, and
//! a DLL with the version resource of NVIDIA's nvml.dll built by mingw-w64 (its oracles: pefile's
//! recorded output, windres run live).

mod objdump;
mod version_oracle;

use std::path::PathBuf;

use cudoctor_pe::{ImportedSymbol, PeFile};
use cudoctor_types::read_at::FileSource;

fn fixture(rel: &str) -> PathBuf {
    cudoctor_testkit::repo_root().join(rel)
}

const TORCH: &str = "tests/fixtures/real/windows/torch-2.15.0-cpu";
const TORCH_FILES: &[&str] = &[
    "torch/lib/c10.dll",
    "torch/lib/shm.dll",
    "torch/lib/torch.dll",
    "torch/lib/torch_global_deps.dll",
    "torch/_C.cp312-win_amd64.pyd",
];

#[test]
fn torch_wheel_dlls_read_as_objdump_reads_them() {
    for rel in TORCH_FILES {
        let path = fixture(&format!("{TORCH}/{rel}"));
        let text = std::fs::read_to_string(format!("{}.objdump.txt", path.display())).unwrap();
        objdump::agrees_with_objdump(&path, &text);
    }
}

#[test]
fn c10_needs_the_visual_cpp_runtime_and_exports_its_api() {
    let pe =
        PeFile::parse(FileSource::open(&fixture(&format!("{TORCH}/torch/lib/c10.dll"))).unwrap())
            .unwrap();
    let dlls: Vec<String> = pe.imports().unwrap().into_iter().map(|i| i.dll).collect();
    for needed in [
        "MSVCP140.dll",
        "VCRUNTIME140.dll",
        "VCRUNTIME140_1.dll",
        "KERNEL32.dll",
    ] {
        assert!(dlls.iter().any(|d| d == needed), "{needed} not in {dlls:?}");
    }
    let exports = pe.exports().unwrap();
    assert_eq!(exports.symbols.len(), 0x7e0);
    assert!(exports.symbols.iter().all(|e| e.forwarder.is_none()));
    // A manifest only, no version resource.
    assert_eq!(pe.file_version().unwrap(), None);
}

#[test]
fn a_delay_load_import_is_read_with_its_names_and_ordinals() {
    let dir = fixture("tests/fixtures/windows/delayload");
    let user = PeFile::parse(FileSource::open(&dir.join("delayuser.dll")).unwrap()).unwrap();
    assert!(user.imports().unwrap().is_empty());
    let delayed = user.delay_imports().unwrap();
    assert_eq!(delayed.len(), 1, "{delayed:?}");
    assert_eq!(delayed[0].dll, "dep.dll");
    let mut symbols = delayed[0].symbols.clone();
    symbols.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(
        symbols,
        vec![
            ImportedSymbol::Name {
                hint: 0,
                name: "dep_answer".into()
            },
            ImportedSymbol::Ordinal(7),
        ]
    );
    let exports = user.exports().unwrap();
    assert!(exports.has_name("user_entry"));
    // dep.dll exports what delayuser.dll takes: dep_answer by name, ordinal 7 without one.
    let dep = PeFile::parse(FileSource::open(&dir.join("dep.dll")).unwrap()).unwrap();
    let dep_exports = dep.exports().unwrap();
    assert!(dep_exports.has_name("dep_answer"));
    assert!(dep_exports.has_ordinal(7));
    assert!(dep_exports
        .symbols
        .iter()
        .any(|e| e.ordinal == 7 && e.name.is_none()));
}

/// tests/fixtures/windows/nvml/nvml.dll (built by build.sh there from nvml.rc): the VS_VERSIONINFO
/// parse reads what pefile read of it (nvml.dll.pefile.txt) and what windres decompiled
/// (nvml.dll.windres.rc, and again live when windres is installed).
#[test]
fn an_nvidia_shaped_version_resource_reads_as_pefile_and_windres_read_it() {
    let dir = fixture("tests/fixtures/windows/nvml");
    let dll = dir.join("nvml.dll");
    let pe = PeFile::parse(FileSource::open(&dll).unwrap()).unwrap();
    let info = pe.version_info().unwrap().expect("a version resource");
    assert_eq!(
        pe.file_version().unwrap(),
        Some(cudoctor_pe::FileVersion([32, 0, 15, 6094]))
    );
    let pefile = std::fs::read_to_string(dir.join("nvml.dll.pefile.txt")).unwrap();
    let expected: Vec<&str> = pefile.lines().collect();
    assert_eq!(version_oracle::as_pefile_prints(&info), expected);
    let recorded = std::fs::read_to_string(dir.join("nvml.dll.windres.rc")).unwrap();
    let w = version_oracle::parse_windres(&recorded);
    assert_eq!(w.as_ref().map(|w| w.strings.len()), Some(5));
    version_oracle::agrees_with_windres(&dll, Some(&info), w.as_ref());
    match version_oracle::windres(&dll) {
        Some(live) => version_oracle::agrees_with_windres(&dll, Some(&info), live.as_ref()),
        // The tests built for Windows (run under Wine by scripts/ci/windows.sh) cannot start
        // binutils' Linux windres: the recorded decompilation above stands for it there.
        None if cfg!(windows) => {}
        None => cudoctor_testkit::skip_missing_tool(
            "an_nvidia_shaped_version_resource_reads_as_pefile_and_windres_read_it (live windres)",
            "no x86_64-w64-mingw32-windres (mingw-w64)",
        ),
    }
}

/// The torch DLLs without a version resource have none for windres either; the delay-load
/// fixtures (lld-link, no resources) neither.
#[test]
fn dlls_without_a_version_resource_have_none() {
    for rel in ["torch/lib/shm.dll", "torch/lib/torch.dll"] {
        let path = fixture(&format!("{TORCH}/{rel}"));
        let pe = PeFile::parse(FileSource::open(&path).unwrap()).unwrap();
        assert_eq!(pe.version_info().unwrap(), None, "{rel}");
        if let Some(live) = version_oracle::windres(&path) {
            assert!(live.is_none(), "windres finds a VERSIONINFO in {rel}");
        }
    }
    let dep = fixture("tests/fixtures/windows/delayload/dep.dll");
    let pe = PeFile::parse(FileSource::open(&dep).unwrap()).unwrap();
    assert_eq!(pe.version_info().unwrap(), None);
}

/// Every prefix of a real DLL, and every single-byte corruption of its headers and import
/// tables, is read without a panic (an error, or a shorter answer); the same for the DLL with
/// a version resource, which reaches the VS_VERSIONINFO parse.
#[test]
fn truncated_and_corrupted_real_dlls_do_not_panic() {
    for rel in [
        format!("{TORCH}/torch/lib/shm.dll"),
        "tests/fixtures/windows/nvml/nvml.dll".to_string(),
    ] {
        truncated_and_corrupted_do_not_panic(&std::fs::read(fixture(&rel)).unwrap());
    }
}

fn truncated_and_corrupted_do_not_panic(bytes: &[u8]) {
    let read_all = |b: &[u8]| {
        if let Ok(pe) = PeFile::parse(b) {
            let _ = pe.imports();
            let _ = pe.delay_imports();
            let _ = pe.exports();
            let _ = pe.file_version();
            let _ = pe.version_info();
        }
    };
    for len in (0..bytes.len()).step_by(7) {
        read_all(&bytes[..len]);
    }
    let mut corrupt = bytes.to_vec();
    for at in (0..bytes.len()).step_by(3) {
        for value in [0x00, 0xff, 0x7f, 0x80] {
            let old = corrupt[at];
            corrupt[at] = value;
            read_all(&corrupt);
            corrupt[at] = old;
        }
    }
}
