//! A one-line spinner on standard error while the `--deep` probes run; only on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cudoctor_collect::deep::{ProbeProgress, ProgressFn};

const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

pub struct Spinner {
    stage: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Spinner {
    /// A running spinner, or `None` when standard error is not a terminal (nothing on a pipe).
    pub fn start() -> Option<Spinner> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let stage = Arc::new(Mutex::new("starting".to_string()));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (stage, stop) = (Arc::clone(&stage), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut frame = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let text = stage.lock().map(|s| s.clone()).unwrap_or_default();
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{} {text}", FRAMES[frame % FRAMES.len()]);
                    let _ = err.flush();
                    frame += 1;
                    std::thread::sleep(Duration::from_millis(120));
                }
            })
        };
        Some(Spinner {
            stage,
            stop,
            ticker: Some(ticker),
        })
    }

    /// The callback the probe runner calls as each stage starts.
    pub fn callback(&self) -> ProgressFn {
        let stage = Arc::clone(&self.stage);
        Arc::new(move |p: &ProbeProgress| {
            if let Ok(mut s) = stage.lock() {
                *s = format!("probing {}: {}", p.interpreter, p.stage);
            }
        })
    }

    /// Stops the spinner and clears its line before the report is printed.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        crate::output::note("\r\x1b[2K");
    }
}
