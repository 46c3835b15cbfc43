//! Hostile input: truncated and corrupted copies of a real library and of a real
//! ld.so.cache must give errors (or reduced results), never panics or runaway allocations.
//! Set CUDOCTOR_LDSO_FUZZ_ROUNDS for a longer run (default keeps CI fast).

mod common;

use std::path::Path;

use common::{build_so, TempTree};
use cudoctor_ldso::{ElfFile, LdCache, LoadOptions, Process, ProcessEnv, SymbolCheck};

fn rounds() -> usize {
    std::env::var("CUDOCTOR_LDSO_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn exercise_elf(bytes: Vec<u8>) {
    if let Ok(elf) = ElfFile::parse(bytes) {
        let _ = elf.needed();
        if let Ok(t) = elf.symbol_table() {
            let _ = t.symbols();
            let _ = t.requirements();
            let _ = t.defines("lib_fn", None);
            let _ = t.defines(
                "lib_fn",
                Some(cudoctor_ldso::elf::symbols::VersionRequest {
                    name: "L_2",
                    hidden: false,
                }),
            );
        }
    }
}

fn sample_library(t: &TempTree) -> Vec<u8> {
    let map = t.write(
        "l.map",
        b"L_1 { global: lib_fn; local: *; };\nL_2 { global: lib_fn2; } L_1;\n",
    );
    let lib = build_so(
        t,
        "libsample.so.1",
        "int lib_fn(void){return 1;} int lib_fn2(void){return 2;} int other(void); int call(void){return other();}",
        &[
            "-Wl,-soname,libsample.so.1",
            &format!("-Wl,--version-script={}", map.display()),
            "-Wl,-rpath,$ORIGIN/x",
            "-Wl,--hash-style=both",
        ],
    );
    std::fs::read(lib).unwrap()
}

#[test]
fn truncated_library_is_an_error() {
    let t = TempTree::new("hostile-trunc");
    let full = sample_library(&t);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    // Every length in the headers, then random lengths through the rest.
    let mut lengths: Vec<usize> = (0..256.min(full.len())).collect();
    lengths.extend((0..rounds()).map(|_| rng.below(full.len())));
    for len in lengths {
        let cut = full[..len].to_vec();
        exercise_elf(cut);
    }
    // The intact file still works, so the loop above did exercise the parser.
    let elf = ElfFile::parse(full).unwrap();
    assert_eq!(elf.soname(), Some("libsample.so.1"));
    assert!(elf.symbol_table().unwrap().defines("lib_fn", None));
}

#[test]
fn corrupted_library_never_panics() {
    let t = TempTree::new("hostile-corrupt");
    let full = sample_library(&t);
    let mut rng = Rng(0x0bad_c0de_dead_beef);
    for _ in 0..rounds() {
        let mut m = full.clone();
        // Corrupt a few bytes, biased to the first pages where headers and tables live.
        for _ in 0..1 + rng.below(8) {
            let limit = if rng.below(2) == 0 {
                4096.min(m.len())
            } else {
                m.len()
            };
            let pos = rng.below(limit);
            m[pos] = (rng.next() & 0xff) as u8;
        }
        exercise_elf(m);
    }
    // Large values in size fields must not allocate wildly: set every 8-byte word of the
    // first 4 KiB to all-ones in turn.
    for off in (0..4096.min(full.len() - 8)).step_by(8) {
        let mut m = full.clone();
        m[off..off + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        exercise_elf(m);
    }
}

#[test]
fn corrupted_libraries_inside_a_process_are_reported_not_fatal() {
    let t = TempTree::new("hostile-process");
    let full = sample_library(&t);
    let mut rng = Rng(0xfeed_face_cafe_f00d);
    for i in 0..rounds().min(100) {
        let mut m = full.clone();
        for _ in 0..4 {
            let pos = rng.below(4096.min(m.len()));
            m[pos] = (rng.next() & 0xff) as u8;
        }
        let path = t.write(&format!("c{i}/libsample.so.1"), &m);
        let mut p = Process::new(ProcessEnv::new(Path::new("/")));
        let _ = p.load(
            &path.to_string_lossy(),
            LoadOptions::check_symbols(SymbolCheck::All),
        );
        let _ = p.report();
    }
}

#[test]
fn corrupted_cache_never_panics() {
    let full = std::fs::read("/etc/ld.so.cache").expect("this machine's ld.so.cache");
    assert!(LdCache::parse(&full).is_ok());
    let mut rng = Rng(0x5eed_5eed_5eed_5eed);
    for _ in 0..rounds() {
        let mut m = full.clone();
        let cut = rng.below(4) == 0;
        if cut {
            m.truncate(rng.below(full.len()));
        }
        for _ in 0..rng.below(6) {
            let limit = 512.min(m.len());
            if limit == 0 {
                break;
            }
            let pos = rng.below(limit);
            m[pos] = (rng.next() & 0xff) as u8;
        }
        if let Ok(c) = LdCache::parse(&m) {
            let _ = c.ldconfig_p_lines("x");
        }
    }
    for len in [0, 1, 11, 12, 16, 20, 47, 48, 49] {
        assert!(
            LdCache::parse(&full[..len.min(full.len())]).is_err(),
            "prefix {len}"
        );
    }
}
