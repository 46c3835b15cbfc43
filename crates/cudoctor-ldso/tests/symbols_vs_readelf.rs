//! The dynamic symbol reader compared with binutils' `readelf --dyn-syms` on real libraries:
//! every symbol's name, version (`@` hidden / `@@` default for definitions, `@` for
//! requirements) and defined/undefined state must agree.

mod common;

use std::path::Path;
use std::process::Command;

use common::{build_so, TempTree};
use cudoctor_ldso::{ElfFile, LdCache, LoaderConfig};

/// (name as readelf prints it, defined) for every symbol after index 0.
fn readelf_symbols(path: &Path) -> Vec<(String, bool)> {
    let out = Command::new("readelf")
        .args(["-W", "--dyn-syms"])
        .arg(path)
        .output()
        .expect("readelf (binutils) must be installed to run these tests");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut syms = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name [(verindex)]
        let Some(num) = cols.first().and_then(|c| c.strip_suffix(':')) else {
            continue;
        };
        let Ok(num) = num.parse::<u64>() else {
            continue;
        };
        if num == 0 || cols.len() < 8 {
            continue;
        }
        let defined = cols[6] != "UND";
        syms.push((cols[7].to_string(), defined));
    }
    syms
}

fn ours(path: &Path) -> Vec<(String, bool)> {
    let elf = ElfFile::open(path).expect("parse");
    let table = elf.symbol_table().expect("symbols");
    table
        .symbols()
        .into_iter()
        .map(|s| {
            let shown = match (&s.version, s.defined) {
                // readelf does not repeat the version on the symbol that names it.
                (Some(v), true) if *v == s.name => s.name.clone(),
                (Some(v), true) if s.version_hidden => format!("{}@{v}", s.name),
                (Some(v), true) => format!("{}@@{v}", s.name),
                (Some(v), false) => format!("{}@{v}", s.name),
                (None, _) => s.name.clone(),
            };
            (shown, s.defined)
        })
        .collect()
}

#[test]
fn versioned_library_built_here() {
    let t = TempTree::new("syms");
    let map = t.write(
        "v.map",
        b"V_1 { global: f; local: *; };\nV_2 { global: f; g; } V_1;\n",
    );
    let lib = build_so(
        &t,
        "libv.so.1",
        r#"__asm__(".symver f_1,f@V_1"); __asm__(".symver f_2,f@@V_2");
           int f_1(void){return 1;} int f_2(void){return 2;} int g(void){return 3;}
           extern int h(void) __attribute__((weak)); int k(void); int u(void){return (h?h():0)+k();}"#,
        &[
            "-Wl,-soname,libv.so.1",
            &format!("-Wl,--version-script={}", map.display()),
        ],
    );
    let ours = ours(&lib);
    assert_eq!(ours, readelf_symbols(&lib));
    assert!(ours.contains(&("f@V_1".to_string(), true)));
    assert!(ours.contains(&("f@@V_2".to_string(), true)));
    let elf = ElfFile::open(&lib).unwrap();
    let reqs = elf.symbol_table().unwrap().requirements();
    let k = reqs.iter().find(|r| r.name == "k").unwrap();
    assert!(!k.weak);
    assert!(reqs.iter().find(|r| r.name == "h").unwrap().weak);
}

#[test]
fn system_libraries() {
    // libc and libstdc++ carry hundreds of versions and thousands of symbols, both hash
    // table kinds appear across distributions.
    let cfg = LoaderConfig::detect(Path::new("/"));
    let cache = LdCache::load(Path::new("/etc/ld.so.cache")).expect("cache");
    let mut checked = 0;
    for name in ["libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"] {
        let Some(path) = cache.lookup(name, &cfg.cache) else {
            continue;
        };
        let path = Path::new(path);
        assert_eq!(ours(path), readelf_symbols(path), "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 2, "expected libc and libm at least");
}
