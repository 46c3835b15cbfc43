#![no_main]
// The `kernel_log` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("kernel_log").expect("target").run)(data));
