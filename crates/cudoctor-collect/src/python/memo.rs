//! One reading of an environment's site directories and dist-info texts while it is read.
//!
//! Reading an environment asks the same things many times: each CUDA-relevant distribution's
//! dist-info directory (the frameworks, the declared requirements and the NumPy pins each look
//! it up, each by listing the site directory) and its METADATA (read by each of the three).
//! While [`scoped`] runs on a thread, [`list_dir`] and [`read_text`] answer each path from the
//! first reading of it; outside a scope they read as [`Host`] does. The scope lasts one
//! environment's reading, so nothing is kept between environments or between checks.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use crate::host::Host;

/// A text as first read, or its error's kind and words.
type Text = Result<Arc<str>, (io::ErrorKind, String)>;

/// What one environment's reading has read so far, shared by the threads reading it.
#[derive(Default)]
pub(crate) struct Memo {
    listings: Mutex<HashMap<String, Arc<Vec<String>>>>,
    texts: Mutex<HashMap<String, Text>>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Memo>>> = const { RefCell::new(None) };
}

/// Runs `f` with `memo` answering this thread's [`list_dir`] and [`read_text`].
pub(crate) fn scoped<R>(memo: &Arc<Memo>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Memo>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(Arc::clone(memo)));
    let _restore = Restore(previous);
    f()
}

fn current() -> Option<Arc<Memo>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// [`Host::list_dir`], listed once per scope.
pub(crate) fn list_dir(host: &Host, p: &str) -> Arc<Vec<String>> {
    let Some(memo) = current() else {
        return Arc::new(host.list_dir(p));
    };
    if let Some(hit) = memo.listings.lock().ok().and_then(|l| l.get(p).cloned()) {
        return hit;
    }
    let listing = Arc::new(host.list_dir(p));
    if let Ok(mut l) = memo.listings.lock() {
        l.entry(p.to_string())
            .or_insert_with(|| Arc::clone(&listing));
    }
    listing
}

/// [`Host::read_text`], read once per scope (an error is given again as it was first said).
pub(crate) fn read_text(host: &Host, p: &str) -> io::Result<Arc<str>> {
    let Some(memo) = current() else {
        return host.read_text(p).map(Arc::from);
    };
    let known = memo.texts.lock().ok().and_then(|t| t.get(p).cloned());
    let answer = match known {
        Some(a) => a,
        None => {
            let a = host
                .read_text(p)
                .map(Arc::from)
                .map_err(|e| (e.kind(), e.to_string()));
            if let Ok(mut t) = memo.texts.lock() {
                t.entry(p.to_string()).or_insert_with(|| a.clone());
            }
            a
        }
    };
    answer.map_err(|(kind, text)| io::Error::new(kind, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_scope_answers_from_its_first_reading_and_ends_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        std::fs::write(dir.path().join("METADATA"), "Name: a\n").unwrap();
        let host = Host::real(Duration::from_secs(5));
        let file = format!("{root}/METADATA");
        let missing = format!("{root}/RECORD");
        let memo = Arc::new(Memo::default());
        scoped(&memo, || {
            assert_eq!(&*read_text(&host, &file).unwrap(), "Name: a\n");
            assert_eq!(list_dir(&host, &root).as_slice(), ["METADATA"]);
            let first = read_text(&host, &missing).unwrap_err().to_string();
            std::fs::write(dir.path().join("METADATA"), "Name: b\n").unwrap();
            std::fs::write(dir.path().join("RECORD"), "").unwrap();
            // Within the scope: the first reading, its error said the same way.
            assert_eq!(&*read_text(&host, &file).unwrap(), "Name: a\n");
            assert_eq!(list_dir(&host, &root).as_slice(), ["METADATA"]);
            assert_eq!(read_text(&host, &missing).unwrap_err().to_string(), first);
        });
        // Outside it, the files as they are now.
        assert_eq!(&*read_text(&host, &file).unwrap(), "Name: b\n");
        assert_eq!(list_dir(&host, &root).as_slice(), ["METADATA", "RECORD"]);
    }
}
