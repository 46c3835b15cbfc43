#![no_main]
// The `ld_so_cache` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("ld_so_cache").expect("target").run)(data));
