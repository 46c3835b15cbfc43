//! The binaries a log names: shared libraries and extension modules by path (`/…/_C.so`,
//! `C:\…\c10.dll`), torch's extension cache (`…/torch_extensions/py311_cu130` with the module
//! "Loading extension module NAME" names). `explain` judges those on this machine with the
//! rules `check` runs before it says the machine contradicts the message.

use regex::Regex;
use serde::Serialize;
use std::sync::OnceLock;

/// Paths kept from one log.
const MAX_NAMED: usize = 32;

/// A binary (or an extension build directory) a log names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedBinary {
    pub line_no: u64,
    /// The path as the log writes it.
    pub path: String,
    /// A directory to look for CUDA libraries in (torch's extension build directory), not a file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub directory: bool,
}

fn patterns() -> Option<&'static [Regex; 3]> {
    static RE: OnceLock<Option<[Regex; 3]>> = OnceLock::new();
    RE.get_or_init(|| {
        Some([
            // A POSIX or Windows path to a shared library or extension module.
            Regex::new(
                r#"(?i)((?:[a-z]:\\|/)[^\s'"`:;,()\[\]<>|*?]*?\.(?:so(?:\.\d+)*|dll|pyd))\b"#,
            )
            .ok()?,
            // torch's extension cache root as cpp_extension prints it.
            Regex::new(r#"((?:[A-Za-z]:\\|/)[^\s'"`;,()]*?torch_extensions[/\\][^\s'"`;,()/\\]+)"#)
                .ok()?,
            Regex::new(r"Loading extension module ([A-Za-z_][A-Za-z0-9_]*)").ok()?,
        ])
    })
    .as_ref()
}

/// What a line must hold for [`Named::feed`] to find anything in it.
pub const LITERALS: [&str; 5] = [
    ".so",
    ".dll",
    ".pyd",
    "torch_extensions",
    "Loading extension module",
];

/// What a log names, gathered line by line.
#[derive(Debug, Clone, Default)]
pub struct Named {
    pub binaries: Vec<NamedBinary>,
    /// Extension modules torch said it loads, for the extension cache's directories.
    modules: Vec<String>,
    roots: Vec<(u64, String)>,
}

impl Named {
    pub fn feed(&mut self, line_no: u64, line: &str) {
        let interesting = LITERALS.iter().any(|l| line.contains(l));
        if !interesting {
            return;
        }
        let Some([file, root, module]) = patterns() else {
            return;
        };
        for c in file.captures_iter(line) {
            if let Some(m) = c.get(1) {
                self.push(line_no, m.as_str(), false);
            }
        }
        if let Some(m) = root.captures(line).and_then(|c| c.get(1)) {
            let r = m.as_str().to_string();
            if !self.roots.iter().any(|(_, x)| *x == r) && self.roots.len() < MAX_NAMED {
                self.roots.push((line_no, r));
            }
        }
        if let Some(m) = module.captures(line).and_then(|c| c.get(1)) {
            let name = m.as_str().to_string();
            if !self.modules.contains(&name) && self.modules.len() < MAX_NAMED {
                self.modules.push(name);
            }
        }
    }

    fn push(&mut self, line_no: u64, path: &str, directory: bool) {
        if self.binaries.len() < MAX_NAMED && !self.binaries.iter().any(|b| b.path == path) {
            self.binaries.push(NamedBinary {
                line_no,
                path: path.to_string(),
                directory,
            });
        }
    }

    /// Everything named: the files, and each extension-cache root joined with each module it
    /// loaded (or the root itself when no module was named).
    pub fn finish(mut self) -> Vec<NamedBinary> {
        let roots = std::mem::take(&mut self.roots);
        let modules = std::mem::take(&mut self.modules);
        for (line_no, root) in roots {
            // A root that is itself a file's directory is already covered by the file.
            if modules.is_empty() {
                self.push(line_no, &root, true);
            }
            for m in &modules {
                let sep = if root.contains('\\') { '\\' } else { '/' };
                self.push(line_no, &format!("{root}{sep}{m}"), true);
            }
        }
        self.binaries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_and_the_extension_cache_are_named() {
        let mut n = Named::default();
        n.feed(
            1,
            "Using /root/.cache/torch_extensions/py311_cu130 as PyTorch extensions root...",
        );
        n.feed(2, "Loading extension module sm80_ext...");
        n.feed(3, "ImportError: /opt/env/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c10");
        n.feed(4, r"OSError: [WinError 126] Error loading C:\Users\me\venv\Lib\site-packages\torch\lib\c10.dll or one of its dependencies.");
        n.feed(
            5,
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        );
        let got: Vec<(String, bool)> = n
            .finish()
            .into_iter()
            .map(|b| (b.path, b.directory))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/opt/env/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so".to_string(), false),
                (r"C:\Users\me\venv\Lib\site-packages\torch\lib\c10.dll".to_string(), false),
                ("/root/.cache/torch_extensions/py311_cu130/sm80_ext".to_string(), true),
            ]
        );
    }
}
