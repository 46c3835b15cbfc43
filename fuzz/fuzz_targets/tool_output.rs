#![no_main]
// The `tool_output` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("tool_output").expect("target").run)(data));
