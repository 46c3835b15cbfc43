#!/usr/bin/env bash
# The bounded fuzz campaign of every parser of untrusted input (crates/cudoctor-fuzz, stable
# Rust): seeds, then seeded mutants for CUDOCTOR_FUZZ_SECONDS per target (CI: 12 s, seven
# targets, two at a time), each input under a time and an allocation limit. A failure prints
# the saved input and the seed that repeats it. Longer campaigns: docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CUDOCTOR_FUZZ_SECONDS="${CUDOCTOR_FUZZ_SECONDS:-12}"
cargo test -p cudoctor-fuzz --test bounded -- --nocapture --test-threads 2
