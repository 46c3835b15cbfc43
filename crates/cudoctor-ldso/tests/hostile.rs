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

/// File offset and size of the named section of an ELF64 little-endian file.
fn section(bytes: &[u8], name: &str) -> Option<(usize, usize)> {
    let u16_at = |o: usize| u16::from_le_bytes(bytes[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shnum, shstrndx) = (u64_at(0x28), u16_at(0x3c), u16_at(0x3e));
    let strtab = u64_at(shoff + shstrndx * 64 + 24);
    (0..shnum).find_map(|i| {
        let sh = shoff + i * 64;
        let name_off = u32::from_le_bytes(bytes[sh..sh + 4].try_into().unwrap()) as usize;
        let end = bytes[strtab + name_off..].iter().position(|&b| b == 0)?;
        (&bytes[strtab + name_off..strtab + name_off + end] == name.as_bytes())
            .then(|| (u64_at(sh + 24), u64_at(sh + 32)))
    })
}

fn word(bytes: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap())
}

fn set_word(bytes: &mut [u8], off: usize, v: u32) {
    bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Without section headers the symbol count comes from the hash tables alone (as after sstrip).
fn without_sections(bytes: &[u8]) -> Vec<u8> {
    let mut m = bytes.to_vec();
    m[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
    m
}

/// A library of `n` exported variables `f0`..`f{n-1}` with the given hash style.
fn many_symbols(t: &TempTree, n: usize, style: &str) -> Vec<u8> {
    let src: String = (0..n).map(|i| format!("int f{i} = {i};\n")).collect();
    let lib = build_so(
        t,
        &format!("libmany-{style}-{n}.so"),
        &src,
        &[&format!("-Wl,--hash-style={style}")],
    );
    std::fs::read(lib).unwrap()
}

#[test]
fn every_four_byte_change_to_a_hash_table_stays_bounded() {
    // The reproducer: one word of a hash table changed made `libs` read hundreds of MB. Every
    // word of both tables, set to each of a few hostile values, with and without section
    // headers: the table is an error or holds no more symbols than the file does, and no
    // lookup walks a long chain.
    let t = TempTree::new("hostile-hash");
    let mut tried = 0;
    for style in ["gnu", "sysv"] {
        let full = many_symbols(&t, 300, style);
        let table = if style == "gnu" { ".gnu.hash" } else { ".hash" };
        let (off, size) = section(&full, table).expect(table);
        let (_, dynsym_size) = section(&full, ".dynsym").unwrap();
        let nsyms = dynsym_size / 24;
        let (dynstr_off, _) = section(&full, ".dynstr").unwrap();
        let (dynsym_off, _) = section(&full, ".dynsym").unwrap();
        for w in (off..off + size).step_by(4) {
            for v in [
                0,
                1,
                u32::MAX,
                0x7fff_fffe,
                (nsyms as u32) + 1000,
                word(&full, w) ^ 1,
            ] {
                let mut m = full.clone();
                set_word(&mut m, w, v);
                for (bytes, most) in [
                    (m.clone(), nsyms),
                    (without_sections(&m), (dynstr_off - dynsym_off) / 24),
                ] {
                    tried += 1;
                    let Ok(elf) = ElfFile::parse(bytes) else {
                        continue;
                    };
                    let Ok(table) = elf.symbol_table() else {
                        continue;
                    };
                    assert!(table.len() <= most, "{style} word {w:#x}={v:#x}: {table:?}");
                    assert!(table.longest_lookup() <= 4096, "{style} word {w:#x}={v:#x}");
                    for f in ["f0", "f150", "f299", "nothing"] {
                        let _ = table.defines(f, None);
                    }
                }
            }
        }
    }
    assert!(tried > 2000, "{tried}");
}

#[test]
fn chains_that_never_end_or_loop_do_not_make_lookups_quadratic() {
    // One chain holding every symbol (GNU: no terminator bit anywhere, every bucket at its
    // start; SysV: every bucket at symbol 1 and each symbol linked to the next, the last back
    // to the first). Walking it per lookup is quadratic; the reader indexes the symbols
    // itself instead, and every lookup still finds its definition.
    let t = TempTree::new("hostile-chains");
    let n = 40_000;
    for style in ["gnu", "sysv"] {
        let mut m = many_symbols(&t, n, style);
        if style == "gnu" {
            let (off, _) = section(&m, ".gnu.hash").unwrap();
            let (nbuckets, symoffset, bloom) =
                (word(&m, off), word(&m, off + 4), word(&m, off + 8));
            let buckets = off + 16 + bloom as usize * 8;
            for b in 0..nbuckets as usize {
                set_word(&mut m, buckets + 4 * b, symoffset);
            }
            let chains = buckets + 4 * nbuckets as usize;
            let (_, dynsym_size) = section(&m, ".dynsym").unwrap();
            for j in 0..dynsym_size / 24 - symoffset as usize {
                let v = word(&m, chains + 4 * j) & !1;
                set_word(&mut m, chains + 4 * j, v);
            }
        } else {
            let (off, _) = section(&m, ".hash").unwrap();
            let (nbucket, nchain) = (word(&m, off) as usize, word(&m, off + 4) as usize);
            for b in 0..nbucket {
                set_word(&mut m, off + 8 + 4 * b, 1);
            }
            let chains = off + 8 + 4 * nbucket;
            for i in 1..nchain {
                let next = if i + 1 == nchain { 1 } else { i + 1 };
                set_word(&mut m, chains + 4 * i, next as u32);
            }
        }
        let started = std::time::Instant::now();
        let elf = ElfFile::parse(m).unwrap();
        let table = elf.symbol_table().unwrap();
        for i in 0..n {
            assert!(table.defines(&format!("f{i}"), None), "{style}: f{i}");
        }
        assert!(!table.defines("nothing", None));
        // A SysV table is measured when read, a GNU one on the first walk past the limit.
        assert!(
            !table.uses_file_hash_table(),
            "{style}: the broken table was used"
        );
        assert_eq!(table.longest_lookup(), 1, "{style}");
        let took = started.elapsed();
        assert!(took.as_secs() < 10, "{style}: {n} lookups took {took:?}");
    }
}

#[test]
fn an_intact_hash_table_is_used_as_it_is() {
    let t = TempTree::new("hostile-intact");
    for style in ["gnu", "sysv"] {
        let full = many_symbols(&t, 2000, style);
        let table = ElfFile::parse(without_sections(&full))
            .unwrap()
            .symbol_table()
            .unwrap();
        assert!(table.uses_file_hash_table(), "{style}");
        assert!(
            table.longest_lookup() < 64,
            "{style}: {}",
            table.longest_lookup()
        );
        assert_eq!(
            table.len(),
            section(&full, ".dynsym").unwrap().1 / 24,
            "{style}"
        );
        assert!(table.defines("f1999", None));
    }
}
