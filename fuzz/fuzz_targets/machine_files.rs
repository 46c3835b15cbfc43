#![no_main]
// The `machine_files` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("machine_files").expect("target").run)(data));
