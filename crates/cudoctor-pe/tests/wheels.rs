//! The real-wheel tier: every DLL, `.pyd` and `.exe` of the Windows wheels unpacked under
//! CUDOCTOR_WINDOWS_WHEELS (torch's, torchvision's and msvc-runtime's, as
//! `scripts/windows/fetch-wheels.sh` lays them out) read by the PE reader and compared with
//! binutils' objdump, file by file, and their version resources compared with windres's and
//! with pefile's recorded reading of NVIDIA's DLLs. Off unless that variable names the directory.

mod objdump;
mod version_oracle;

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

/// Every version resource of the wheels' PE files reads as binutils' windres decompiles it, and
/// the DLLs of NVIDIA's CUDA wheels (cudart64_12.dll, cudnn64_9.dll) as pefile read them
/// (tests/fixtures/real/windows/nvidia-wheels.pefile.txt), every string included.
#[test]
fn every_version_resource_of_the_windows_wheels_reads_as_windres_and_pefile_read_it() {
    let test = "every_version_resource_of_the_windows_wheels_reads_as_windres_and_pefile_read_it";
    let Some(dir) = std::env::var_os("CUDOCTOR_WINDOWS_WHEELS") else {
        cudoctor_testkit::skip_opt_in(
            test,
            "CUDOCTOR_WINDOWS_WHEELS names the unpacked wheels (scripts/windows/fetch-wheels.sh)",
        );
        return;
    };
    let dir = PathBuf::from(dir);
    let mut files = Vec::new();
    pe_files(&dir, &mut files);
    files.sort();
    let mut with_version = 0;
    for f in &files {
        let info = PeFile::parse(FileSource::open(f).unwrap())
            .unwrap()
            .version_info()
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let Some(w) = version_oracle::windres(f) else {
            cudoctor_testkit::skip_missing_tool(test, "no x86_64-w64-mingw32-windres (mingw-w64)");
            return;
        };
        version_oracle::agrees_with_windres(f, info.as_ref(), w.as_ref());
        with_version += usize::from(w.is_some());
    }
    // The Visual C++ runtime's DLLs, libiomp5md.dll, cudart64_12.dll, ...: most have one.
    assert!(with_version >= 10, "{with_version} version resources");
    let recorded =
        cudoctor_testkit::repo_root().join("tests/fixtures/real/windows/nvidia-wheels.pefile.txt");
    let records = version_oracle::pefile_records(&std::fs::read_to_string(recorded).unwrap());
    assert_eq!(records.len(), 2);
    for (name, lines) in records {
        let (wheel, member) = name.split_once('/').unwrap();
        let wheel_dir = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(wheel))
            .unwrap_or_else(|| panic!("no {wheel}* under {}", dir.display()));
        let path = wheel_dir.join(member);
        let info = PeFile::parse(FileSource::open(&path).unwrap())
            .unwrap()
            .version_info()
            .unwrap()
            .unwrap_or_else(|| panic!("{}: no version resource", path.display()));
        assert_eq!(version_oracle::as_pefile_prints(&info), lines, "{name}");
    }
}
