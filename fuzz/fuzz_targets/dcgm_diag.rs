#![no_main]
// The `dcgm_diag` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("dcgm_diag").expect("target").run)(data));
