#![no_main]
// The `fatbin` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("fatbin").expect("target").run)(data));
