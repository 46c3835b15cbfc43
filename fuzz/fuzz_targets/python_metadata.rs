#![no_main]
// The `python_metadata` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("python_metadata").expect("target").run)(data));
