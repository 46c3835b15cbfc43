//! The PE reader on real files: DLLs and an extension module of torch 2.15.0's Windows wheel
//! (CPU build, win_amd64), each beside what binutils' objdump printed of it
//! (`scripts/windows/objdump-tables.sh`), and a DLL linked by lld-link with a delay-load import.

mod objdump;

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

/// Every prefix of a real DLL, and every single-byte corruption of its headers and import
/// tables, is read without a panic (an error, or a shorter answer).
#[test]
fn truncated_and_corrupted_real_dlls_do_not_panic() {
    let bytes = std::fs::read(fixture(&format!("{TORCH}/torch/lib/shm.dll"))).unwrap();
    let read_all = |b: &[u8]| {
        if let Ok(pe) = PeFile::parse(b) {
            let _ = pe.imports();
            let _ = pe.delay_imports();
            let _ = pe.exports();
            let _ = pe.file_version();
        }
    };
    for len in (0..bytes.len()).step_by(7) {
        read_all(&bytes[..len]);
    }
    let mut corrupt = bytes.clone();
    for at in (0..bytes.len()).step_by(3) {
        for value in [0x00, 0xff, 0x7f, 0x80] {
            let old = corrupt[at];
            corrupt[at] = value;
            read_all(&corrupt);
            corrupt[at] = old;
        }
    }
}
