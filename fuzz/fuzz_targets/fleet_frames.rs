#![no_main]
// The `fleet_frames` target of crates/cudoctor-fuzz, under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| (cudoctor_fuzz::target("fleet_frames").expect("target").run)(data));
