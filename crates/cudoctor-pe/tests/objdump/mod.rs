//! Reads what `scripts/windows/objdump-tables.sh` keeps of binutils' `objdump -p`: the oracle
//! the PE reader is compared with (binutils' PE reader is an independent implementation).

use cudoctor_pe::{ImportedSymbol, Machine, PeFile};
use cudoctor_types::read_at::FileSource;

/// What objdump says of one file.
#[derive(Debug, Default)]
pub struct Tables {
    pub format: String,
    pub is_dll: bool,
    /// Each imported DLL with its (hint, name) pairs, in table order.
    pub imports: Vec<(String, Vec<(u16, String)>)>,
    pub export_dll_name: Option<String>,
    /// (ordinal, name) of each export by name.
    pub exports: Vec<(u32, String)>,
    /// The delay-load directory's data directory entry is not empty (objdump 2.40 does not
    /// print the delay-load tables themselves).
    pub has_delay_directory: bool,
}

#[derive(PartialEq)]
enum Part {
    Headers,
    Imports,
    Exports,
    ExportNames,
}

pub fn parse(text: &str) -> Tables {
    let mut t = Tables {
        format: text
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .trim_start_matches("file format ")
            .to_string(),
        ..Tables::default()
    };
    let mut part = Part::Headers;
    let mut base = 0u32;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("The Import Tables") {
            part = Part::Imports;
            continue;
        }
        if trimmed.starts_with("The Export Tables") {
            part = Part::Exports;
            continue;
        }
        if trimmed == "[Ordinal/Name Pointer] Table" {
            part = Part::ExportNames;
            continue;
        }
        match part {
            Part::Headers => {
                if trimmed == "DLL" {
                    t.is_dll = true;
                } else if let Some(rest) = line.strip_prefix("Entry d ") {
                    t.has_delay_directory = !rest.starts_with("0000000000000000 00000000");
                }
            }
            Part::Imports => {
                if let Some(dll) = trimmed.strip_prefix("DLL Name: ") {
                    t.imports.push((dll.to_string(), Vec::new()));
                    continue;
                }
                // "4260\t 2855  ??0RefcountedMapAllocator@at@@QEAA@PEBDH_K@Z" (a descriptor
                // line has six hexadecimal fields).
                let parts: Vec<&str> = trimmed.split_whitespace().collect();
                if parts.len() < 3 || parts.len() >= 6 || trimmed.starts_with("vma:") {
                    continue;
                }
                // An ordinal import is printed in hexadecimal with the name `<none>`.
                let number = if parts[2] == "<none>" {
                    u16::from_str_radix(parts[1], 16)
                } else {
                    parts[1].parse()
                };
                if let (Some((_, symbols)), Ok(hint)) = (t.imports.last_mut(), number) {
                    symbols.push((hint, parts[2].to_string()));
                }
            }
            Part::Exports => {
                if let Some(rest) = trimmed.strip_prefix("Ordinal Base") {
                    base = rest.trim().parse().unwrap();
                } else if let Some(rest) = trimmed.strip_prefix("Name ") {
                    if !rest.trim_start().starts_with("Pointer") {
                        t.export_dll_name = rest.split_whitespace().nth(1).map(str::to_string);
                    }
                }
            }
            Part::ExportNames => {
                // "[   1] dep_answer": the index into the export address table.
                if let Some((index, name)) =
                    trimmed.strip_prefix('[').and_then(|r| r.split_once(']'))
                {
                    let index: u32 = index.trim().parse().unwrap();
                    t.exports.push((base + index, name.trim().to_string()));
                }
            }
        }
    }
    t
}

/// The reader's imports and exports of `path` are objdump's, entry for entry.
pub fn agrees_with_objdump(path: &std::path::Path, objdump_text: &str) {
    let oracle = parse(objdump_text);
    assert!(
        !oracle.imports.is_empty(),
        "{}: objdump lists no imports",
        path.display()
    );
    assert_eq!(oracle.format, "pei-x86-64", "{}", path.display());
    let pe = PeFile::parse(FileSource::open(path).unwrap()).unwrap();
    assert_eq!(pe.machine(), Machine::X64);
    assert!(pe.is_pe32_plus());
    assert_eq!(pe.is_dll(), oracle.is_dll, "{}", path.display());
    let imports: Vec<(String, Vec<(u16, String)>)> = pe
        .imports()
        .unwrap()
        .into_iter()
        .map(|i| {
            let symbols = i
                .symbols
                .into_iter()
                .map(|s| match s {
                    ImportedSymbol::Name { hint, name } => (hint, name),
                    // objdump prints an ordinal import as its ordinal and `<none>`.
                    ImportedSymbol::Ordinal(o) => (o, "<none>".to_string()),
                })
                .collect();
            (i.dll, symbols)
        })
        .collect();
    let dlls =
        |v: &[(String, Vec<(u16, String)>)]| v.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
    assert_eq!(dlls(&imports), dlls(&oracle.imports), "{}", path.display());
    for ((dll, ours), (_, theirs)) in imports.iter().zip(&oracle.imports) {
        let first = ours.iter().zip(theirs).position(|(a, b)| a != b);
        assert!(
            first.is_none() && ours.len() == theirs.len(),
            "{}: {dll}: {} symbols here, {} in objdump; first difference at {first:?}: {:?} against {:?}",
            path.display(),
            ours.len(),
            theirs.len(),
            first.and_then(|k| ours.get(k)),
            first.and_then(|k| theirs.get(k)),
        );
    }
    let exports = pe.exports().unwrap();
    assert_eq!(
        exports.dll_name,
        oracle.export_dll_name,
        "{}",
        path.display()
    );
    let mut named: Vec<(u32, String)> = exports
        .symbols
        .iter()
        .filter_map(|e| Some((e.ordinal, e.name.clone()?)))
        .collect();
    let mut expected = oracle.exports.clone();
    named.sort();
    expected.sort();
    assert_eq!(named, expected, "{}", path.display());
    assert_eq!(
        !pe.delay_imports().unwrap().is_empty(),
        oracle.has_delay_directory,
        "{}",
        path.display()
    );
}
