//! Scans of synthetic ELF files with byte-built fat binaries.

use super::*;
use crate::fatbin::{Compression, EntryKind, SuffixSource};
use crate::testutil::{concat_entry, container, cubin_header, section_of, ElfBuilder, Entry};

const A: u64 = 0x10_0000;
const F: u64 = 0x20_0000;

fn elf_with(fatbin: &[u8]) -> Vec<u8> {
    ElfBuilder::new()
        .section(".text", &[0x90; 24])
        .section(".nv_fatbin", fatbin)
        .build()
}

fn scan(img: &[u8]) -> FileImages {
    scan_bytes(img).expect("scan")
}

#[test]
fn lists_sorted_deduplicated_architectures() {
    let sec = section_of(&[
        container(&[Entry::sass(120), Entry::sass(80), Entry::ptx(90)]),
        container(&[
            Entry::sass(100),
            Entry::sass(80),
            Entry::sass(90).flags(A),
            Entry::sass(90),
        ]),
    ]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_80", "sm_90", "sm_90a", "sm_100", "sm_120"]);
    assert_eq!(img.ptx, ["compute_90"]);
    assert_eq!(
        img.ptx_isa.get("compute_90").map(String::as_str),
        Some("9.0")
    );
    assert_eq!(img.containers, 2);
    assert_eq!(img.entries.len(), 7);
    assert!(img.warnings.is_empty(), "{:?}", img.warnings);
    assert!(img
        .entries
        .iter()
        .all(|e| e.suffix_source != SuffixSource::Payload));
}

#[test]
fn a_and_f_flags_for_sass_and_ptx() {
    let sec = section_of(&[container(&[
        Entry::sass(100).flags(A),
        Entry::sass(100).flags(F),
        Entry::sass(103).flags(A | 0x100_0000),
        Entry::ptx(100).flags(F),
        Entry::ptx(90).flags(A),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_100a", "sm_100f", "sm_103a"]);
    assert_eq!(img.ptx, ["compute_90a", "compute_100f"]);
    assert_eq!(img.cuobjdump_sass(), ["sm_100", "sm_100a", "sm_103a"]);
    assert!(img
        .entries
        .iter()
        .all(|e| e.suffix_source == SuffixSource::Header));
}

#[test]
fn compression_is_read_from_flags() {
    let data = cubin_header(8, 0x0600_5a04);
    let sec = section_of(&[container(&[
        Entry::sass(80),
        Entry::sass(86).zstd(&data),
        Entry::sass(89).lz4(&data),
        Entry::kind(8, 80).flags(0x1_8000),
        Entry::sass(75).payload(vec![1; 16]).flags(0),
    ])]);
    let mut bytes = sec.clone();
    // Entry 5: a compressed size with no codec flag.
    let fifth = find_entry(&bytes, 4);
    bytes[fifth + 16..fifth + 20].copy_from_slice(&8u32.to_le_bytes());
    let img = scan(&elf_with(&bytes));
    let comp: Vec<Compression> = img.entries.iter().map(|e| e.compression).collect();
    assert_eq!(
        comp,
        [
            Compression::None,
            Compression::Zstd,
            Compression::Lz4,
            Compression::Opaque,
            Compression::Unknown
        ]
    );
    assert_eq!(img.entries[1].uncompressed_size, data.len() as u64);
    assert!(img.entries[1].compressed_size > 0);
    assert_eq!(img.lto, ["lto_80"]);
    assert_eq!(img.sass, ["sm_75", "sm_80", "sm_86", "sm_89"]);
}

/// Offset of entry `n` of the single container of a section built by `section_of`.
fn find_entry(sec: &[u8], n: usize) -> usize {
    let mut q = 16;
    for _ in 0..n {
        let hs = u32::from_le_bytes(sec[q + 4..q + 8].try_into().unwrap()) as usize;
        let ps = u64::from_le_bytes(sec[q + 8..q + 16].try_into().unwrap()) as usize;
        q += hs + ps;
    }
    q
}

#[test]
fn unknown_kinds_are_kept_but_not_listed() {
    let sec = section_of(&[container(&[
        Entry::kind(0x10, 90),
        Entry::kind(0x40, 0),
        Entry::sass(90),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_90"]);
    assert_eq!(img.entries[0].kind, EntryKind::Other(0x10));
    assert_eq!(img.entries[0].arch, None);
}

#[test]
fn variable_header_sizes_and_identifier() {
    let sec = section_of(&[container(&[
        Entry::sass(90).header_size(80),
        Entry::sass(100).header_size(264).flags(A),
        Entry::ptx(80).identifier("CMakeCUDACompilerId.cu"),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_90", "sm_100a"]);
    assert_eq!(img.entries[1].header_size, 264);
    assert_eq!(
        img.entries[2].identifier.as_deref(),
        Some("CMakeCUDACompilerId.cu")
    );
}

#[test]
fn concatenated_group_lists_its_cubins() {
    let sec = section_of(&[container(&[
        Entry::sass(120),
        concat_entry(&[(80, 0x11), (86, 0x11), (90, 0x11 | A)]),
        Entry::ptx(120),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_80", "sm_86", "sm_90a", "sm_120"]);
    assert_eq!(img.ptx, ["compute_120"]);
    let in_group = img.entries.iter().filter(|e| e.in_concat_group).count();
    assert_eq!(in_group, 3);
}

#[test]
fn concat_table_that_does_not_fit_is_corrupt() {
    let mut e = concat_entry(&[(80, 0x11)]);
    e.extension[..4].copy_from_slice(&5000u32.to_le_bytes());
    let sec = section_of(&[container(&[e])]);
    assert!(matches!(
        scan_bytes(&elf_with(&sec)),
        Err(ScanError::Corrupt(_))
    ));
    let mut e = concat_entry(&[(80, 0x11)]);
    e.extension[..4].copy_from_slice(&3u32.to_le_bytes());
    let sec = section_of(&[container(&[e])]);
    assert!(matches!(
        scan_bytes(&elf_with(&sec)),
        Err(ScanError::Corrupt(_))
    ));
}

#[test]
fn relocatable_fatbins_follow_cuobjdumps_default() {
    let exec = section_of(&[container(&[Entry::sass(80), Entry::sass(100)])]);
    let reloc = section_of(&[container(&[
        Entry::sass(80),
        Entry::sass(100).flags(F),
        Entry::ptx(100).flags(F),
    ])]);
    let both = ElfBuilder::new()
        .section(".nv_fatbin", &exec)
        .section("__nv_relfatbin", &reloc)
        .build();
    let img = scan(&both);
    assert_eq!(img.sass, ["sm_80", "sm_100"]);
    assert!(img.ptx.is_empty());
    assert_eq!((img.containers, img.relocatable_containers), (1, 1));
    assert_eq!(img.entries.len(), 5);
    assert_eq!(img.entries.iter().filter(|e| e.relocatable).count(), 3);

    let only_reloc = ElfBuilder::new().section("__nv_relfatbin", &reloc).build();
    let img = scan(&only_reloc);
    assert_eq!(img.sass, ["sm_80", "sm_100f"]);
    assert_eq!(img.ptx, ["compute_100f"]);
}

#[test]
fn non_elf_and_plain_elf_are_empty_not_errors() {
    assert_eq!(scan(b"just text"), FileImages::default());
    let plain = ElfBuilder::new().section(".text", &[1, 2, 3]).build();
    let img = scan(&plain);
    assert!(!img.has_fatbin());
    assert!(img.sass.is_empty() && img.entries.is_empty());
}

#[test]
fn wrapper_records_are_counted() {
    let mut seg = Vec::new();
    for v in [2u32, 1] {
        seg.extend_from_slice(&0x4662_43B1u32.to_le_bytes());
        seg.extend_from_slice(&v.to_le_bytes());
        seg.extend_from_slice(&[0; 16]);
    }
    let img = scan(
        &ElfBuilder::new()
            .section(".nv_fatbin", &section_of(&[container(&[Entry::sass(80)])]))
            .section(".nvFatBinSegment", &seg)
            .build(),
    );
    assert_eq!(img.wrappers, 2);
    let img = scan(&ElfBuilder::new().section(".nvFatBinSegment", &seg).build());
    assert_eq!(img.wrappers, 2);
    assert_eq!(img.warnings.len(), 1);
}

// --- Fat binaries from CUDA 12 tools: the suffix is only in the payload. ---

fn cuda12_sass(arch: u32, e_flags: u32, abi: u8) -> Entry {
    Entry::sass(arch)
        .version(1, 7)
        .payload(cubin_header(abi, e_flags))
}

#[test]
fn cuda12_cubin_suffix_from_elf_flags_uncompressed_zstd_and_lz4() {
    let hdr_a = cubin_header(7, 0x005a_0d5a);
    let hdr_100a = cubin_header(8, 0x0600_640a);
    let sec = section_of(&[container(&[
        cuda12_sass(90, 0x005a_0d5a, 7),
        Entry::sass(90).version(1, 7).zstd(&hdr_a),
        Entry::sass(90).version(1, 7).lz4(&hdr_a),
        Entry::sass(100).version(1, 7).zstd(&hdr_100a),
        cuda12_sass(90, 0x005a_055a, 7),
        cuda12_sass(80, 0x0050_0d50, 7), // sm_80 has no `a` form: never peeked
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_80", "sm_90", "sm_90a", "sm_100a"]);
    let sources: Vec<SuffixSource> = img.entries.iter().map(|e| e.suffix_source).collect();
    use SuffixSource::{None as N, Payload as P};
    assert_eq!(sources, [P, P, P, P, N, N]);

    let no_peek = scan_source(
        &elf_with(&sec)[..],
        &ScanOptions {
            peek_payloads: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(no_peek.sass, ["sm_80", "sm_90", "sm_100"]);
}

#[test]
fn cuda12_ptx_suffix_from_target_line() {
    let text = b"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 8.8\n.target sm_90a\n.address_size 64\n";
    let sec = section_of(&[container(&[
        Entry::ptx(90).version(8, 8).zstd(text),
        Entry::ptx(100)
            .version(8, 8)
            .payload(b".version 8.8\n.target sm_100f\n\0\0\0".to_vec()),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.ptx, ["compute_90a", "compute_100f"]);
    assert_eq!(
        img.ptx_isa.get("compute_90a").map(String::as_str),
        Some("8.8")
    );
}

#[test]
fn cuda13_headers_are_trusted_without_peeking() {
    // Code version 1.8 and no flag: plain, whatever the payload says.
    let sec = section_of(&[container(&[
        Entry::sass(90).payload(cubin_header(7, 0x005a_0d5a))
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_90"]);
}

/// `.nv.compat` copies as nvcc 13.5 and ptxas 12.9 write them (dumped from real builds).
const COMPAT_13_A: &str = "0002090100040b08000000000000000000030e40";
const COMPAT_13_PLAIN: &str =
    "0002090000020c000002020100030d01010307010102030000040b08005000000000000000030e40";
const COMPAT_129: &str = "00020201000205050002030000020601";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn compat_block_in_the_header_gives_the_suffix_without_decompressing() {
    // The payload is deliberately not a cubin: only the header may be read.
    let sec = section_of(&[container(&[
        Entry::sass(103)
            .compat_block(&hex(COMPAT_13_A))
            .zstd(b"not a cubin"),
        Entry::sass(120)
            .compat_block(&hex(COMPAT_13_PLAIN))
            .zstd(b"not a cubin"),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_103a", "sm_120"]);
    assert!(img
        .entries
        .iter()
        .all(|e| e.suffix_source == SuffixSource::Header));
}

#[test]
fn compat_block_without_the_attribute_falls_back_to_the_cubin() {
    // ptxas 12.9's sm_100a cubin: ABI 8 with the 0x8 bit; code version 1.8 like CUDA 13.
    let sec = section_of(&[container(&[
        Entry::sass(100)
            .compat_block(&hex(COMPAT_129))
            .zstd(&cubin_header(8, 0x0600_640a)),
        Entry::sass(120)
            .compat_block(&hex(COMPAT_129))
            .lz4(&cubin_header(8, 0x0600_7802)),
    ])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_100a", "sm_120"]);
    assert_eq!(img.entries[0].suffix_source, SuffixSource::Payload);
}

#[test]
fn corrupt_compat_block_is_ignored() {
    let mut e = Entry::sass(100).compat_block(&hex(COMPAT_13_A));
    // Point the block far outside the header.
    e.extension[..4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let sec = section_of(&[container(&[e])]);
    assert_eq!(scan(&elf_with(&sec)).sass, ["sm_100"]);
}

#[test]
fn corrupt_compressed_payload_only_loses_the_suffix() {
    let mut e = Entry::sass(90)
        .version(1, 7)
        .zstd(&cubin_header(7, 0x005a_0d5a));
    for b in e.payload.iter_mut().skip(8) {
        *b ^= 0xa5;
    }
    let sec = section_of(&[container(&[e])]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_90"]);
}

// --- Layout oddities and hostile input. ---

#[test]
fn gaps_are_searched_and_reported_unless_zero() {
    let c = container(&[Entry::sass(80)]);
    let mut sec = vec![0u8; 16];
    sec.extend_from_slice(&c);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_80"]);
    assert!(img.warnings.is_empty());

    let mut sec = vec![0xee; 24];
    sec.extend_from_slice(&c);
    sec.extend_from_slice(&[1, 2, 3]);
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_80"]);
    assert_eq!(img.warnings.len(), 1, "{:?}", img.warnings);
}

#[test]
fn large_gaps_span_several_chunks() {
    let mut sec = vec![0u8; 200_000];
    sec.extend_from_slice(&container(&[Entry::sass(86)]));
    let img = scan(&elf_with(&sec));
    assert_eq!(img.sass, ["sm_86"]);
}

fn set_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn hostile_sizes_are_errors() {
    let good = section_of(&[container(&[Entry::sass(80), Entry::sass(90)])]);

    let mut s = good.clone();
    set_u64(&mut s, 8, u64::MAX - 4); // fat_size overflows
    assert!(matches!(
        scan_bytes(&elf_with(&s)),
        Err(ScanError::Truncated(_))
    ));

    let mut s = good.clone();
    s[4] = 2; // container version
    assert!(matches!(
        scan_bytes(&elf_with(&s)),
        Err(ScanError::Corrupt(_))
    ));

    let mut s = good.clone();
    s[6] = 8; // container header size
    assert!(matches!(
        scan_bytes(&elf_with(&s)),
        Err(ScanError::Corrupt(_))
    ));

    let mut s = good.clone();
    s[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes()); // entry header size < 64
    assert!(matches!(
        scan_bytes(&elf_with(&s)),
        Err(ScanError::Corrupt(_))
    ));

    let mut s = good.clone();
    set_u64(&mut s, 16 + 8, u64::MAX); // payload size overflows
    assert!(matches!(
        scan_bytes(&elf_with(&s)),
        Err(ScanError::Truncated(_))
    ));

    let mut s = good.clone();
    s[16 + 4..16 + 8].copy_from_slice(&u32::MAX.to_le_bytes()); // header past the container
    assert!(matches!(
        scan_bytes(&elf_with(&s)),
        Err(ScanError::Truncated(_))
    ));
}

#[test]
fn section_past_end_of_file_is_truncation() {
    let img = elf_with(&section_of(&[container(&[Entry::sass(80)])]));
    // Point .nv_fatbin's size far past the end: section header 2 (null, .text, .nv_fatbin).
    let shoff = u64::from_le_bytes(img[40..48].try_into().unwrap()) as usize;
    let mut bad = img.clone();
    set_u64(&mut bad, shoff + 2 * 64 + 32, 1 << 40);
    assert!(matches!(scan_bytes(&bad), Err(ScanError::Truncated(_))));
}

/// Every cut of the fat binary section: never a panic; a cut inside a container is an error;
/// a cut between containers keeps the whole ones.
#[test]
fn truncation_at_every_offset() {
    let c1 = container(&[
        Entry::sass(80),
        Entry::ptx(90).zstd(b".version 9.0\n.target sm_90\n"),
    ]);
    let c2 = container(&[
        concat_entry(&[(86, 0x11), (90, 0x11 | A)]),
        Entry::sass(120).header_size(96),
    ]);
    let sec = section_of(&[c1.clone(), c2.clone()]);
    let c2_start = c1.len().next_multiple_of(8);
    let c2_end = c2_start + c2.len();
    for n in 0..=sec.len() {
        let r = scan_bytes(&elf_with(&sec[..n]));
        let inside_c1 = n > 0 && n < c1.len();
        let inside_c2 = n > c2_start && n < c2_end;
        match r {
            Ok(img) => {
                assert!(!inside_c1 || n < 16, "cut at {n} accepted: {img:?}");
                assert!(
                    !inside_c2 || n < c2_start + 16,
                    "cut at {n} accepted: {img:?}"
                );
                if (n < 16 && n > 0) || (n > c2_start && n < c2_start + 16) {
                    // A cut-off container header: reported, not silently dropped.
                    assert!(!img.warnings.is_empty(), "cut at {n}");
                }
            }
            Err(e) => assert!(inside_c1 || inside_c2, "cut at {n} refused: {e}"),
        }
    }
    // And cuts of the whole file (the section table is at the end): errors, never panics.
    let whole = elf_with(&sec);
    for n in 0..whole.len() {
        let _ = scan_bytes(&whole[..n]);
    }
}

/// Deterministic mutation fuzzing in the normal suite: random byte changes, insertions of
/// interesting values and truncations of a valid file, checking only that nothing panics and
/// that results stay bounded. `CUDOCTOR_FUZZ_ITERS` raises the count for long runs.
#[test]
fn mutations_never_panic() {
    let sec = section_of(&[
        container(&[
            Entry::sass(80),
            Entry::sass(90)
                .version(1, 7)
                .zstd(&cubin_header(7, 0x005a_0d5a)),
            Entry::ptx(90)
                .version(8, 8)
                .lz4(b".version 8.8\n.target sm_90a\n"),
            Entry::ptx(100).flags(F).identifier("x.cu"),
        ]),
        container(&[
            concat_entry(&[(86, 0x11), (90, 0x11 | A)]),
            Entry::kind(8, 80).flags(0x1_8000),
            Entry::sass(100).compat_block(&hex(COMPAT_13_PLAIN)),
            Entry::sass(100)
                .compat_block(&hex(COMPAT_129))
                .zstd(&cubin_header(8, 0x0600_640a)),
        ]),
    ]);
    // The unmutated file must scan as expected, or the fuzzing below would test nothing.
    let base = ElfBuilder::new()
        .section(".nv_fatbin", &sec)
        .section(
            "__nv_relfatbin",
            &section_of(&[container(&[Entry::sass(100)])]),
        )
        .section(".nvFatBinSegment", &[0xb1, 0x43, 0x62, 0x46, 1, 0, 0, 0])
        .build();
    let clean = scan_bytes(&base).expect("base scans");
    assert_eq!(clean.entries.len(), 10);
    assert_eq!(
        clean.sass,
        ["sm_80", "sm_86", "sm_90a", "sm_100", "sm_100a"]
    );
    let iters: u64 = std::env::var("CUDOCTOR_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let interesting: [u64; 8] = [
        0,
        1,
        0x40,
        0xff,
        0xffff_ffff,
        u64::MAX,
        0xBA55_ED50,
        0x8000_0000_0000_0000,
    ];
    let start = std::time::Instant::now();
    for _ in 0..iters {
        let mut m = base.clone();
        let edits = 1 + next() % 8;
        for _ in 0..edits {
            let at = (next() % m.len() as u64) as usize;
            match next() % 4 {
                0 => m[at] = next() as u8,
                1 => m[at] ^= 1 << (next() % 8),
                2 => {
                    let v = interesting[(next() % interesting.len() as u64) as usize].to_le_bytes();
                    let w = [1usize, 2, 4, 8][(next() % 4) as usize];
                    for (k, b) in v.iter().take(w).enumerate() {
                        if let Some(slot) = m.get_mut(at + k) {
                            *slot = *b;
                        }
                    }
                }
                _ => {
                    let cut = (next() % m.len() as u64) as usize;
                    m.truncate(cut.max(1));
                }
            }
            if m.is_empty() {
                break;
            }
        }
        if let Ok(img) = scan_bytes(&m) {
            assert!(img.entries.len() < 10_000);
        }
    }
    assert!(start.elapsed().as_secs() < 30, "fuzz loop too slow");
}

#[test]
fn scan_file_and_scan_many_keep_order_and_errors() {
    let dir = std::env::temp_dir().join(format!("cudoctor-fatbin-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("liba.so");
    let b = dir.join("libb.so");
    std::fs::write(&a, elf_with(&section_of(&[container(&[Entry::sass(80)])]))).unwrap();
    std::fs::write(&b, b"not elf").unwrap();
    let missing = dir.join("missing.so");
    let paths = vec![a.clone(), missing.clone(), b.clone(), a.clone()];
    for threads in [1, 3, 16] {
        let out = scan_many(&paths, threads);
        let got: Vec<&PathBuf> = out.iter().map(|(p, _)| p).collect();
        assert_eq!(got, paths.iter().collect::<Vec<_>>());
        assert_eq!(out[0].1.as_ref().unwrap().sass, ["sm_80"]);
        assert!(matches!(out[1].1, Err(ScanError::Io { .. })));
        assert!(out[2].1.as_ref().unwrap().sass.is_empty());
    }
    assert!(scan_many(&[], 4).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_json_shape() {
    use crate::compat::{ComputeCapability, CudaVersion};
    use crate::report::{kernels_report, GpuTarget};
    let img = scan(&elf_with(&section_of(&[container(&[
        Entry::sass(80),
        Entry::ptx(90),
    ])])));
    let scans = vec![
        (PathBuf::from("/x/libk.so"), Ok(img)),
        (PathBuf::from("/x/plain.so"), Ok(FileImages::default())),
        (
            PathBuf::from("/x/bad.so"),
            Err(ScanError::Corrupt("container at 0x10".into())),
        ),
    ];
    let gpus = [GpuTarget {
        index: Some(0),
        name: Some("NVIDIA H200".into()),
        compute_capability: ComputeCapability::new(9, 0),
    }];
    let r = kernels_report(&scans, &gpus, Some(CudaVersion::new(13, 0)));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "libraries": [
                {"path": "/x/libk.so", "sass": ["sm_80"], "ptx": ["compute_90"], "ptx_isa": {"compute_90": "9.0"}},
                {"path": "/x/bad.so", "sass": [], "ptx": [], "error": "corrupt: container at 0x10"}
            ],
            "gpus": [{
                "index": 0, "name": "NVIDIA H200", "compute_capability": "9.0",
                "libraries": [{"path": "/x/libk.so", "verdict": "ptx_jit", "via": "compute_90"}]
            }],
            "driver_cuda": "13.0"
        })
    );
}

#[test]
fn many_containers_are_walked_in_parallel_with_the_same_result_as_in_order() {
    // Enough containers to take the multi-threaded path; each entry's container index and the
    // order of entries must be exactly those of a walk in file order.
    let archs = [75, 80, 86, 90, 100, 120];
    let containers: Vec<Vec<u8>> = (0..1000)
        .map(|i| {
            container(&[
                Entry::sass(archs[i % archs.len()]),
                Entry::ptx(archs[(i + 1) % archs.len()]),
            ])
        })
        .collect();
    let img = scan(&elf_with(&section_of(&containers)));
    assert_eq!(img.containers, 1000);
    assert_eq!(img.entries.len(), 2000);
    for (i, e) in img.entries.iter().enumerate() {
        assert_eq!(e.container as usize, i / 2, "entry {i}");
        let want = if i % 2 == 0 {
            archs[(i / 2) % archs.len()]
        } else {
            archs[(i / 2 + 1) % archs.len()]
        };
        assert_eq!(e.sm, want, "entry {i}");
    }
    assert!(img.entries.windows(2).all(|w| w[0].offset < w[1].offset));
    assert_eq!(img.sass.len(), 6);

    // A broken container late in the section is still an error, as in order.
    let mut sec = section_of(&containers);
    let last = sec.len() - 40;
    sec.truncate(last);
    assert!(scan_bytes(&elf_with(&sec)).is_err());
}

/// A 4 KB library that claims gigabytes of holes, its `.nv_fatbin` naming 8 GB of them: refused
/// before any of it is read (walking the zeros took 23 s).
#[cfg(unix)]
#[test]
fn a_section_of_gigabytes_of_holes_is_refused_at_once() {
    let img = elf_with(&section_of(&[container(&[Entry::sass(80)])]));
    let shoff = u64::from_le_bytes(img[40..48].try_into().unwrap()) as usize;
    let mut bad = img.clone();
    set_u64(&mut bad, shoff + 2 * 64 + 32, 8 << 30);
    let path = std::env::temp_dir().join(format!("cudoctor-holes-{}.so", std::process::id()));
    std::fs::write(&path, &bad).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(9 << 30).unwrap();
    drop(f);
    let started = std::time::Instant::now();
    let r = crate::scan::scan_file(&path);
    let _ = std::fs::remove_file(&path);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    match r {
        Err(ScanError::Corrupt(why)) => assert!(why.contains("holes"), "{why}"),
        other => panic!("{other:?}"),
    }
}

// --- A deadline ends a scan inside one file. ---

#[test]
fn a_passed_deadline_ends_the_scan_of_a_file_and_says_so() {
    // Many containers and a gap of zeros: both loops ask the deadline.
    let mut containers: Vec<Vec<u8>> = (0..64).map(|_| container(&[Entry::sass(90)])).collect();
    containers.push(vec![0u8; 1 << 20]);
    containers.push(container(&[Entry::sass(80)]));
    let elf = elf_with(&section_of(&containers));
    assert_eq!(scan(&elf).sass, ["sm_80", "sm_90"]);
    let late = ScanOptions {
        deadline: cudoctor_types::Deadline::after(std::time::Duration::ZERO),
        ..Default::default()
    };
    let err = scan_source(&elf[..], &late).unwrap_err();
    assert!(matches!(err, ScanError::Stopped(_)), "{err}");
    assert!(err.to_string().contains("time budget"), "{err}");
}
