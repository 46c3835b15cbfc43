//! Two independent readers of version resources, the oracles of the VS_VERSIONINFO parse:
//! pefile (PyPI) through tests/fixtures/windows/nvml/pefile-version.py, whose output is recorded
//! beside the files, and binutils' windres decompiling a DLL's resources (`-O rc`), run live.

// Shared by two test binaries (real_dlls, wheels), each using a part of it.
#![allow(dead_code)]

use std::path::Path;

use cudoctor_pe::VersionInfo;

/// The version resource as pefile-version.py prints it.
pub fn as_pefile_prints(info: &VersionInfo) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(v) = info.file_version {
        out.push(format!("FileVersion {v}"));
    }
    if let Some(v) = info.product_version {
        out.push(format!("ProductVersion {v}"));
    }
    out.extend(info.strings.iter().map(|(k, v)| format!("String {k}={v}")));
    out
}

/// The sections of a recorded pefile output: `== <wheel>/<member> sha256 <hex>` and its lines.
pub fn pefile_records(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        match line.strip_prefix("== ") {
            Some(head) => out.push((head.split(' ').next().unwrap_or("").to_string(), Vec::new())),
            None => match out.last_mut() {
                Some((_, lines)) => lines.push(line.to_string()),
                None => out.push((String::new(), vec![line.to_string()])),
            },
        }
    }
    out
}

/// What windres decompiles of the first VERSIONINFO: FILEVERSION and PRODUCTVERSION as dotted
/// versions, and the VALUEs of the StringFileInfo's first table whose text windres prints
/// plainly (not as an `L"..."` string with escapes). `None` when the file has no VERSIONINFO.
pub struct Windres {
    pub file_version: String,
    pub product_version: String,
    pub strings: Vec<(String, String)>,
}

/// Runs `x86_64-w64-mingw32-windres -i PATH -O rc`; `None` when windres is not installed.
pub fn windres(path: &Path) -> Option<Option<Windres>> {
    let out = std::process::Command::new("x86_64-w64-mingw32-windres")
        .arg("-i")
        .arg(path)
        .args(["-O", "rc"])
        .output()
        .ok()?;
    // windres fails on a file without resources ("no resources").
    Some(parse_windres(&String::from_utf8_lossy(&out.stdout)))
}

pub fn parse_windres(text: &str) -> Option<Windres> {
    let rc = &text[text.find(" VERSIONINFO")?..];
    let dotted = |key: &str| -> Option<String> {
        let line = rc.lines().find_map(|l| l.trim().strip_prefix(key))?;
        Some(line.split(',').map(str::trim).collect::<Vec<_>>().join("."))
    };
    let mut strings = Vec::new();
    // The first table: from the block after "StringFileInfo" to its END.
    let tables = &rc[rc.find("BLOCK \"StringFileInfo\"").unwrap_or(rc.len())..];
    let mut in_table = false;
    for line in tables.lines().skip(1).map(str::trim) {
        if line.starts_with("BLOCK ") {
            in_table = true;
            continue;
        }
        if in_table && line == "END" {
            break;
        }
        let Some(rest) = line.strip_prefix("VALUE \"") else {
            continue;
        };
        let Some((key, value)) = rest.split_once("\", ") else {
            continue;
        };
        if let Some(v) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            if !v.contains('\\') {
                strings.push((key.to_string(), v.to_string()));
            }
        }
    }
    Some(Windres {
        file_version: dotted("FILEVERSION ")?,
        product_version: dotted("PRODUCTVERSION ")?,
        strings,
    })
}

/// The parse of `path` agrees with windres: the same versions, and every string windres prints
/// plainly is ours, word for word.
pub fn agrees_with_windres(path: &Path, info: Option<&VersionInfo>, w: Option<&Windres>) {
    let (Some(info), Some(w)) = (info, w) else {
        assert!(
            info.and_then(|i| i.file_version).is_none() && w.is_none(),
            "{}: windres and the PE reader disagree on whether it has a version",
            path.display()
        );
        return;
    };
    let ours = |v: Option<cudoctor_pe::FileVersion>| v.map(|v| v.to_string()).unwrap_or_default();
    assert_eq!(
        ours(info.file_version),
        w.file_version,
        "{}",
        path.display()
    );
    assert_eq!(
        ours(info.product_version),
        w.product_version,
        "{}",
        path.display()
    );
    for (k, v) in &w.strings {
        assert_eq!(info.string(k), Some(v.as_str()), "{}: {k}", path.display());
    }
}
