//! The real-wheel tier: every DLL, `.pyd` and `.exe` of the Windows wheels unpacked under
//! CUDOCTOR_WINDOWS_WHEELS (torch's, torchvision's and msvc-runtime's, as
//! `scripts/windows/fetch-wheels.sh` lays them out) read by the PE reader and compared with
//! binutils' objdump, file by file. Off unless that variable names the directory.

mod objdump;

use std::path::{Path, PathBuf};

use cudoctor_pe::PeFile;
use cudoctor_types::read_at::FileSource;

fn pe_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            pe_files(&p, out);
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| ["dll", "pyd", "exe"].contains(&x.to_ascii_lowercase().as_str()))
        {
            out.push(p);
        }
    }
}

#[test]
fn every_pe_file_of_the_windows_wheels_reads_as_objdump_reads_it() {
    let test = "every_pe_file_of_the_windows_wheels_reads_as_objdump_reads_it";
    let Some(dir) = std::env::var_os("CUDOCTOR_WINDOWS_WHEELS") else {
        cudoctor_testkit::skip_opt_in(
            test,
            "CUDOCTOR_WINDOWS_WHEELS names the unpacked wheels (scripts/windows/fetch-wheels.sh)",
        );
        return;
    };
    let script = cudoctor_testkit::repo_root().join("scripts/windows/objdump-tables.sh");
    if std::process::Command::new("x86_64-w64-mingw32-objdump")
        .arg("--version")
        .output()
        .is_err()
    {
        cudoctor_testkit::skip_missing_tool(test, "no x86_64-w64-mingw32-objdump (mingw-w64)");
        return;
    }
    let mut files = Vec::new();
    pe_files(Path::new(&dir), &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("torch/lib/torch_cpu.dll")),
        "no torch/lib/torch_cpu.dll under {}",
        Path::new(&dir).display()
    );
    for f in &files {
        let out = std::process::Command::new(&script).arg(f).output().unwrap();
        assert!(out.status.success(), "objdump on {}", f.display());
        objdump::agrees_with_objdump(f, &String::from_utf8_lossy(&out.stdout));
    }
    // The Visual C++ runtime's DLLs carry their version; the runtime is 14.x.
    let mut versions = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "msvcp140.dll"))
    {
        let pe = PeFile::parse(FileSource::open(f).unwrap()).unwrap();
        let v = pe
            .file_version()
            .unwrap()
            .expect("msvcp140.dll has a version resource");
        assert_eq!(v.0[0], 14, "{}: {v}", f.display());
        versions.push(format!("{}: {v}", f.display()));
    }
    assert!(
        !versions.is_empty(),
        "no msvcp140.dll under {}",
        Path::new(&dir).display()
    );
    eprintln!(
        "{} PE files agree with objdump; {}",
        files.len(),
        versions.join("; ")
    );
}
