//! Stand-in for `cudoctor libs` until the CLI wires this crate in; also what
//! scripts/device/libs_vs_ldd.sh can run:
//!
//!     libs [libs] [--format json] [--no-symbols] [--all-symbols] [--root DIR] [--exe PYTHON] PATH...
//!
//! Loads the PATHs, in order, into one emulated process (like `import torch` then each
//! extension) with this process's LD_LIBRARY_PATH / LD_PRELOAD, and prints the JSON report.
//! `--exe` first loads the interpreter as the process's executable, so the Python C API
//! symbols extensions import are found.

use std::path::PathBuf;
use std::time::Instant;

use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};

fn main() {
    let mut root = PathBuf::from("/");
    let mut check = SymbolCheck::Requested;
    let mut paths = Vec::new();
    let mut exe = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "libs" => {}
            "--format" => {
                let _ = args.next();
            }
            "--no-symbols" => check = SymbolCheck::None,
            "--all-symbols" => check = SymbolCheck::All,
            "--root" => root = args.next().map(PathBuf::from).unwrap_or(root),
            "--exe" => exe = args.next(),
            _ => paths.push(a),
        }
    }
    let started = Instant::now();
    let env = ProcessEnv::new(&root).with_vars(std::env::vars());
    let mut process = Process::new(env);
    let mut failed = false;
    if let Some(exe) = &exe {
        if let Err(e) = process.load_executable(exe, LoadOptions::default()) {
            eprintln!("{e}");
            failed = true;
        }
    }
    for p in &paths {
        if let Err(e) = process.load(p, LoadOptions::check_symbols(check)) {
            eprintln!("{e}");
            failed = true;
        }
    }
    for w in process.warnings() {
        eprintln!("warning: {w}");
    }
    match serde_json::to_string_pretty(&process.report_without_loader()) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("{e}");
            failed = true;
        }
    }
    eprintln!("elapsed: {:.3} s", started.elapsed().as_secs_f64());
    if failed {
        std::process::exit(2);
    }
}
