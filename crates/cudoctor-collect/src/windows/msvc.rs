//! MSVC on a Windows machine, read from files: the `cl.exe` on PATH, and the Visual Studio
//! installations the installer records in its state files (what `vswhere.exe` reports:
//! `%ProgramData%\Microsoft\VisualStudio\Packages\_Instances\<id>\state.json`), each with the
//! MSVC toolsets it holds (`VC\Tools\MSVC\<version>\bin\Hostx64\x64\cl.exe`) and its
//! `VC\Auxiliary\Build\vcvarsall.bat`. Nothing is run.

use cudoctor_pe::winfs::{WinFs, WinPath};
use cudoctor_snapshot::windows::{MsvcFacts, VisualStudio};

use crate::host::Host;

/// The MSVC facts of the Windows machine of `host`, whose PATH is `path`.
pub fn collect(fs: &WinFs, host: &Host, path: &[WinPath]) -> MsvcFacts {
    let cl_on_path = path.iter().find_map(|dir| fs.file_in(dir, "cl.exe"));
    let x86 = WinPath::new(
        host.var("PROGRAMFILES(X86)")
            .unwrap_or(r"C:\Program Files (x86)"),
    );
    let vswhere = fs.file_in(
        &x86.join("Microsoft Visual Studio").join("Installer"),
        "vswhere.exe",
    );
    let instances = WinPath::new(host.var("PROGRAMDATA").unwrap_or(r"C:\ProgramData"))
        .join("Microsoft")
        .join("VisualStudio")
        .join("Packages")
        .join("_Instances");
    let mut installations: Vec<VisualStudio> = fs
        .list(&instances)
        .iter()
        .filter_map(|id| {
            let state_file = fs.file_in(&instances.join(id), "state.json")?;
            let text = super::read_text(fs, &state_file, 8 << 20)?;
            installation(fs, state_file, &text)
        })
        .collect();
    installations.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
    MsvcFacts {
        cl_on_path,
        vswhere,
        installations,
    }
}

/// One installation from its state file's text; `None` when it names no installation path.
fn installation(fs: &WinFs, state_file: WinPath, text: &str) -> Option<VisualStudio> {
    // The installer writes UTF-8, sometimes with a byte order mark.
    let v: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
    let s = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let path = WinPath::new(v["installationPath"].as_str()?);
    let msvc = path.join("VC").join("Tools").join("MSVC");
    let mut toolsets = fs.list(&msvc);
    toolsets.sort();
    let cl_x64 = toolsets
        .iter()
        .filter_map(|t| {
            let bin = msvc.join(t).join("bin").join("Hostx64").join("x64");
            fs.file_in(&bin, "cl.exe")
        })
        .collect();
    let vcvarsall = fs.file_in(
        &path.join("VC").join("Auxiliary").join("Build"),
        "vcvarsall.bat",
    );
    Some(VisualStudio {
        state_file,
        product: s(&v["product"]["id"]),
        line: s(&v["catalogInfo"]["productLineVersion"]),
        version: s(&v["installationVersion"]),
        path,
        cl_x64,
        vcvarsall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    const BUILD_TOOLS: &str = r"C:\Program Files (x86)\Microsoft Visual Studio\2022\BuildTools";

    fn tree(files: &[&str], state: Option<&str>) -> (tempfile::TempDir, WinFs, Host) {
        let d = tempfile::tempdir().unwrap();
        let put = |win: &str, body: &[u8]| {
            let rel = win.replacen(':', "", 1).replace('\\', "/");
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        };
        for f in files {
            put(f, b"MZ");
        }
        if let Some(state) = state {
            put(
                r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\3d1f0b4c\state.json",
                state.as_bytes(),
            );
        }
        let host = Host::rooted(
            d.path().to_path_buf(),
            BTreeMap::new(),
            Duration::from_secs(1),
        );
        let fs = WinFs::rooted(d.path());
        (d, fs, host)
    }

    fn state() -> String {
        format!(
            "\u{feff}{{\"installationPath\": {}, \"installationVersion\": \"17.14.36310.24\", \"catalogInfo\": {{\"productLineVersion\": \"2022\"}}, \"product\": {{\"id\": \"Microsoft.VisualStudio.Product.BuildTools\"}}}}",
            serde_json::to_string(BUILD_TOOLS).unwrap()
        )
    }

    #[test]
    fn build_tools_with_the_cpp_workload_are_read_from_the_installers_state() {
        let cl = format!(r"{BUILD_TOOLS}\VC\Tools\MSVC\14.44.35207\bin\Hostx64\x64\cl.exe");
        let vcvarsall = format!(r"{BUILD_TOOLS}\VC\Auxiliary\Build\vcvarsall.bat");
        let (_d, fs, host) = tree(&[&cl, &vcvarsall], Some(&state()));
        let m = collect(&fs, &host, &[WinPath::new(r"C:\Windows\System32")]);
        assert!(m.cl_on_path.is_none());
        assert_eq!(m.installations.len(), 1);
        let vs = &m.installations[0];
        assert_eq!(vs.path.as_str(), BUILD_TOOLS);
        assert_eq!(
            vs.product.as_deref(),
            Some("Microsoft.VisualStudio.Product.BuildTools")
        );
        assert_eq!(vs.line.as_deref(), Some("2022"));
        assert_eq!(vs.cl_x64.len(), 1);
        assert!(vs.cl_x64[0].same_as(&WinPath::new(&cl)));
        assert!(vs.has_cpp());
    }

    #[test]
    fn an_installation_without_cpp_and_cl_on_path_are_told_apart() {
        let (_d, fs, host) = tree(&[r"C:\Tools\cl.exe"], Some(&state()));
        let m = collect(
            &fs,
            &host,
            &[WinPath::new(r"C:\Windows"), WinPath::new(r"C:\Tools")],
        );
        assert!(m.cl_on_path.is_some());
        assert!(!m.installations[0].has_cpp());
        // No state files, a damaged one: no installation.
        let (_d, fs, host) = tree(&[], Some("{not json"));
        assert!(collect(&fs, &host, &[]).installations.is_empty());
        let (_d, fs, host) = tree(&[], None);
        assert_eq!(collect(&fs, &host, &[]), MsvcFacts::default());
    }
}
