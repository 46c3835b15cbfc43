//! A minimal stand-in for `cudoctor kernels --format json`, for trying the reader by hand:
//! `cargo run --release -p cudoctor-fatbin --example kernels -- [--gpu 9.0] [--driver 13.0] PATH...`
//! (directories are searched with `find_cuda_libraries`).

use std::path::PathBuf;

use cudoctor_fatbin::compat::{ComputeCapability, CudaVersion};
use cudoctor_fatbin::report::{kernels_report, GpuTarget};
use cudoctor_fatbin::{default_threads, find_cuda_libraries, scan_many};

fn main() {
    let mut gpus = Vec::new();
    let mut driver = None;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--gpu" => {
                let v = args.next().unwrap_or_default();
                match ComputeCapability::parse(&v) {
                    Some(cc) => gpus.push(GpuTarget {
                        index: None,
                        name: None,
                        compute_capability: cc,
                    }),
                    None => {
                        eprintln!("not a compute capability: {v}");
                        std::process::exit(2);
                    }
                }
            }
            "--driver" => driver = args.next().as_deref().and_then(CudaVersion::parse),
            flag if flag.starts_with('-') => {
                eprintln!("unknown option {flag}");
                std::process::exit(2);
            }
            _ => {
                let p = PathBuf::from(a);
                if p.is_dir() {
                    paths.extend(find_cuda_libraries(&p));
                } else {
                    paths.push(p);
                }
            }
        }
    }
    let scans = scan_many(&paths, default_threads());
    let report = kernels_report(&scans, &gpus, driver);
    match serde_json::to_string_pretty(&report) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
