#![no_main]
// The `mcp` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("mcp").expect("target").run)(data));
