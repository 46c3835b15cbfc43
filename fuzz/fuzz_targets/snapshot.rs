#![no_main]
// The `snapshot` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("snapshot").expect("target").run)(data));
