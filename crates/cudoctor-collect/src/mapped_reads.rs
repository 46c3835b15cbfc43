//! Large tables of the inspected libraries are read through read-only file mappings
//! (cudoctor_types::read_at): only the pages looked at are read. A library another process
//! truncates while it is mapped raises SIGBUS on the lost pages; this turns that into a message
//! and exit status 2 instead of a crash with no word.

/// What the SIGBUS handler writes before exiting.
#[cfg(unix)]
const MESSAGE: &[u8] =
    b"cudoctor: error: a library file shrank while it was being read (another process is changing the environment); run cudoctor again when it is done\n";

/// Installs the handler; call once, first thing in `main`. A no-op where there is no SIGBUS.
#[allow(unsafe_code)]
pub fn guard_mapped_reads() {
    #[cfg(unix)]
    {
        // SAFETY: the handler only makes async-signal-safe calls (write(2), _exit(2)).
        let _ = unsafe {
            signal_hook::low_level::register(signal_hook::consts::SIGBUS, || {
                let _ = rustix::io::write(rustix::stdio::stderr(), MESSAGE);
                signal_hook::low_level::exit(2);
            })
        };
    }
}

#[cfg(all(test, unix))]
mod tests {
    use cudoctor_types::read_at::{FileSource, ReadAt};

    const CHILD: &str = "CUDOCTOR_TEST_SIGBUS_FILE";

    /// In a child process (this test binary again): map a file, truncate it under the mapping,
    /// touch the lost pages.
    #[test]
    fn a_file_truncated_under_its_mapping_is_a_message_and_exit_2() {
        if let Some(path) = std::env::var_os(CHILD) {
            super::guard_mapped_reads();
            let src = FileSource::open(std::path::Path::new(&path)).unwrap();
            let bytes = src.read_bytes(0, 1 << 20).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(0)
                .unwrap();
            let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
            println!("read {sum} after truncation: no fault");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.so");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "mapped_reads::tests::a_file_truncated_under_its_mapping_is_a_message_and_exit_2",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, &path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("a library file shrank while it was being read"),
            "{stderr}"
        );
    }
}
