//! One budget of worker threads for the whole process.
//!
//! Every pool of a check (the RECORD reads, the environments, the site-packages walk, the
//! symbol tables, the kernel scan) used to size itself from the machine's cores on its own, so
//! on a 16-core machine pools nested inside each other kept forty-odd threads alive at once,
//! each with its stack and its malloc arena (most of the peak memory there). Here they all draw
//! from one [`ThreadBudget`]: a pool asks for up to N workers and gets the threads that are
//! free, and the calling thread always works too, so a pool progresses with no thread granted
//! and nested pools cannot deadlock waiting for each other's threads.
//!
//! The bound: at any time at most [`ThreadBudget::limit`] threads spawned through the budget
//! are alive, beside the threads that call into it (the main thread and the few probe threads
//! that are not pool workers).
//!
//! Workers keep Rust's default stack: 256 KiB stacks gave no lower peak (2026-12-02,
//! docs/check-speed.md), as only the pages a thread touches are resident.

use std::num::NonZeroUsize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;

/// The environment variable that sets the process's budget (a positive number of threads),
/// for measuring a check under a given number of threads.
pub const THREADS_VAR: &str = "CUDOCTOR_THREADS";

/// The default budget's ceiling: past eight workers a check's pools wait on the file system
/// and on each other more than they gain, and every thread costs memory.
pub const DEFAULT_MAX_THREADS: usize = 8;

/// A number of worker threads shared by every pool of the process.
#[derive(Debug)]
pub struct ThreadBudget {
    limit: usize,
    /// Threads spawned through this budget that are alive now.
    busy: AtomicUsize,
}

impl ThreadBudget {
    /// A budget of `limit` spawned workers (0: every pool runs on its caller alone).
    pub const fn new(limit: usize) -> ThreadBudget {
        ThreadBudget {
            limit,
            busy: AtomicUsize::new(0),
        }
    }

    /// The process's budget: `CUDOCTOR_THREADS` when it is a positive number, otherwise the
    /// available parallelism, at most [`DEFAULT_MAX_THREADS`]. Read once.
    pub fn process() -> &'static ThreadBudget {
        static PROCESS: OnceLock<ThreadBudget> = OnceLock::new();
        PROCESS.get_or_init(|| {
            let set = std::env::var(THREADS_VAR).ok();
            ThreadBudget::new(limit_from(
                set.as_deref(),
                thread::available_parallelism().ok(),
            ))
        })
    }

    /// How many workers the budget may have alive at once. A pool sizes its shares by it.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes up to `wanted` threads from what is free; how many were taken.
    fn take(&self, wanted: usize) -> usize {
        let mut busy = self.busy.load(Ordering::Relaxed);
        loop {
            let granted = wanted.min(self.limit.saturating_sub(busy));
            if granted == 0 {
                return 0;
            }
            match self.busy.compare_exchange_weak(
                busy,
                busy + granted,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return granted,
                Err(now) => busy = now,
            }
        }
    }

    /// Runs `worker` on the calling thread and on as many more threads as the budget grants,
    /// `wanted` runners in all at most (at least the caller). Each runner's result, the
    /// caller's first; a runner that panicked gives its panic (the others still finish).
    pub fn run<R: Send>(
        &self,
        wanted: usize,
        worker: impl Fn() -> R + Sync,
    ) -> Vec<thread::Result<R>> {
        let granted = self.take(wanted.saturating_sub(1));
        let worker = &worker;
        thread::scope(|s| {
            let mut spawned = Vec::with_capacity(granted);
            for _ in 0..granted {
                let permit = Permit(self);
                let job = move || {
                    let _permit = permit;
                    worker()
                };
                // A thread the system refuses leaves its share to the others.
                if let Ok(h) = thread::Builder::new().spawn_scoped(s, job) {
                    spawned.push(h);
                }
            }
            let mut out = Vec::with_capacity(spawned.len() + 1);
            out.push(catch_unwind(AssertUnwindSafe(worker)));
            out.extend(spawned.into_iter().map(|h| h.join()));
            out
        })
    }

    /// `work` on every item, the items pulled one at a time by up to `wanted` runners
    /// ([`ThreadBudget::run`]); the results in item order, `Err` for an item whose work
    /// panicked.
    pub fn map<T: Sync, R: Send>(
        &self,
        items: &[T],
        wanted: usize,
        work: impl Fn(&T) -> R + Sync,
    ) -> Vec<thread::Result<R>> {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<thread::Result<R>>>> =
            Mutex::new(items.iter().map(|_| None).collect());
        self.run(wanted.min(items.len()), || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = catch_unwind(AssertUnwindSafe(|| work(item)));
            if let Ok(mut all) = results.lock() {
                all[i] = Some(r);
            }
        });
        let all = results.into_inner().unwrap_or_else(|p| p.into_inner());
        all.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Box::new("the worker thread failed"))))
            .collect()
    }

    /// Starts `f` on a thread of its own when the budget has one free, otherwise runs it on
    /// the calling thread now; [`Started::join`] gives its result either way. For work that
    /// runs beside the caller's own (a second emulation beside the first).
    pub fn spawn_or_run<'scope, T: Send + 'scope>(
        &'scope self,
        s: &'scope thread::Scope<'scope, '_>,
        f: impl FnOnce() -> T + Send + 'scope,
    ) -> Started<'scope, T> {
        match self.try_spawn(s, f) {
            Ok(started) => started,
            Err(Some(f)) => Started::Done(catch_unwind(AssertUnwindSafe(f))),
            Err(None) => Started::Done(Err(Box::new("the work was lost with its thread"))),
        }
    }

    /// As [`ThreadBudget::spawn_or_run`], but with no thread free the work runs at
    /// [`Started::join`], after the caller's own work instead of before it: for work that may
    /// wait for something while the caller's work needs nothing of it.
    pub fn spawn_or_defer<'scope, T: Send + 'scope>(
        &'scope self,
        s: &'scope thread::Scope<'scope, '_>,
        f: impl FnOnce() -> T + Send + 'scope,
    ) -> Started<'scope, T> {
        match self.try_spawn(s, f) {
            Ok(started) => started,
            Err(Some(f)) => Started::Deferred(Box::new(f)),
            Err(None) => Started::Done(Err(Box::new("the work was lost with its thread"))),
        }
    }

    /// Starts `f` on a thread of its own when the budget has one free; otherwise gives `f`
    /// back (`None` only if the system refused the thread and the work was lost with it).
    fn try_spawn<'scope, T: Send + 'scope, F: FnOnce() -> T + Send + 'scope>(
        &'scope self,
        s: &'scope thread::Scope<'scope, '_>,
        f: F,
    ) -> Result<Started<'scope, T>, Option<F>> {
        if self.take(1) != 1 {
            return Err(Some(f));
        }
        let permit = Permit(self);
        // The work waits in a slot the thread empties, so that it is still here to run on the
        // caller when the system refuses the thread.
        let slot = Arc::new(Mutex::new(Some(f)));
        let theirs = Arc::clone(&slot);
        let spawned = thread::Builder::new().spawn_scoped(s, move || {
            let _permit = permit;
            let f = theirs.lock().ok().and_then(|mut f| f.take());
            f.map(|f| f())
        });
        match spawned {
            Ok(h) => Ok(Started::Spawned(h)),
            Err(_) => Err(slot.lock().ok().and_then(|mut f| f.take())),
        }
    }
}

/// Work started by [`ThreadBudget::spawn_or_run`] or [`ThreadBudget::spawn_or_defer`].
pub enum Started<'scope, T> {
    /// Running on a thread of its own.
    Spawned(thread::ScopedJoinHandle<'scope, Option<T>>),
    /// Run on the caller already.
    Done(thread::Result<T>),
    /// To run on the caller at [`Started::join`].
    Deferred(Box<dyn FnOnce() -> T + Send + 'scope>),
}

impl<T> Started<'_, T> {
    /// The work's result, `Err` with its panic if it panicked.
    pub fn join(self) -> thread::Result<T> {
        match self {
            Started::Spawned(h) => h
                .join()
                .and_then(|r| r.ok_or_else(|| Box::new("the work was lost") as _)),
            Started::Done(r) => r,
            Started::Deferred(f) => catch_unwind(AssertUnwindSafe(f)),
        }
    }
}

/// One spawned thread's share of the budget, given back when the thread ends (or unwinds).
struct Permit<'a>(&'a ThreadBudget);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The budget for a `CUDOCTOR_THREADS` value and the available parallelism: a positive number
/// set wins (0 or text is ignored); otherwise the cores, at most [`DEFAULT_MAX_THREADS`], at
/// least one.
fn limit_from(set: Option<&str>, cores: Option<NonZeroUsize>) -> usize {
    if let Some(n) = set
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        return n;
    }
    cores.map_or(1, NonZeroUsize::get).min(DEFAULT_MAX_THREADS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    #[test]
    fn limit_is_the_variable_else_the_cores_capped() {
        let cores = NonZeroUsize::new(16);
        assert_eq!(limit_from(Some("3"), cores), 3);
        assert_eq!(limit_from(Some(" 32 "), cores), 32);
        assert_eq!(limit_from(Some("0"), cores), 8);
        assert_eq!(limit_from(Some("many"), cores), 8);
        assert_eq!(limit_from(None, cores), 8);
        assert_eq!(limit_from(None, NonZeroUsize::new(2)), 2);
        assert_eq!(limit_from(None, None), 1);
    }

    /// Counts the runners alive at once and the most seen.
    #[derive(Default)]
    struct Alive {
        now: AtomicUsize,
        most: AtomicUsize,
    }

    impl Alive {
        fn enter(&self) {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(n, Ordering::SeqCst);
        }
        fn leave(&self) {
            self.now.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn deferred_work_runs_after_the_callers_when_no_thread_is_free() {
        let budget = ThreadBudget::new(0);
        let order = Mutex::new(Vec::new());
        thread::scope(|s| {
            let later = budget.spawn_or_defer(s, || order.lock().unwrap().push("deferred"));
            order.lock().unwrap().push("caller");
            later.join().unwrap();
        });
        assert_eq!(*order.lock().unwrap(), ["caller", "deferred"]);
        // With a thread free it runs there, and its result comes back the same way.
        let budget = ThreadBudget::new(1);
        thread::scope(|s| {
            let spawned = budget.spawn_or_defer(s, || 7);
            assert!(matches!(spawned, Started::Spawned(_)));
            assert_eq!(spawned.join().unwrap(), 7);
        });
        assert_eq!(budget.busy.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn nested_pools_stay_within_the_budget_and_finish() {
        // Three levels of pools each asking for more than the budget: the spawned threads
        // alive at once never pass it, and every item is done.
        let budget = ThreadBudget::new(3);
        let alive = Alive::default();
        let outer: Vec<u32> = (0..6).collect();
        let sums = budget.map(&outer, 8, |&o| {
            let inner: Vec<u32> = (0..5).collect();
            budget
                .map(&inner, 8, |&i| {
                    let leaves: Vec<u32> = (0..4).collect();
                    budget
                        .map(&leaves, 8, |&l| {
                            alive.enter();
                            assert!(budget.busy.load(Ordering::SeqCst) <= 3);
                            thread::sleep(Duration::from_millis(1));
                            alive.leave();
                            o * 100 + i * 10 + l
                        })
                        .into_iter()
                        .map(|r| r.unwrap())
                        .sum::<u32>()
                })
                .into_iter()
                .map(|r| r.unwrap())
                .sum::<u32>()
        });
        let sums: Vec<u32> = sums.into_iter().map(|r| r.unwrap()).collect();
        let want: Vec<u32> = (0..6u32)
            .map(|o| {
                (0..5u32)
                    .map(|i| (0..4u32).map(|l| o * 100 + i * 10 + l).sum::<u32>())
                    .sum()
            })
            .collect();
        assert_eq!(sums, want);
        // The caller plus the three spawned workers: four runners at most.
        assert!(alive.most.load(Ordering::SeqCst) <= 4);
        assert!(
            alive.most.load(Ordering::SeqCst) >= 2,
            "the budget was never used"
        );
        assert_eq!(
            budget.busy.load(Ordering::SeqCst),
            0,
            "a permit was not given back"
        );
    }

    #[test]
    fn an_empty_budget_runs_on_the_caller() {
        let budget = ThreadBudget::new(0);
        let me = thread::current().id();
        let items = [1, 2, 3];
        let out = budget.map(&items, 4, |&x| (x * 2, thread::current().id()));
        for (r, x) in out.into_iter().zip(items) {
            let (doubled, on) = r.unwrap();
            assert_eq!(doubled, x * 2);
            assert_eq!(on, me);
        }
        let started = thread::scope(|s| budget.spawn_or_run(s, || thread::current().id()).join());
        assert_eq!(started.unwrap(), me);
    }

    #[test]
    fn a_panicking_item_costs_that_item_only() {
        let budget = ThreadBudget::new(2);
        let items = [1, 2, 3, 4];
        let out = budget.map(&items, 3, |&x| {
            if x == 3 {
                panic!("item three");
            }
            x
        });
        let ok: Vec<Option<i32>> = out.into_iter().map(|r| r.ok()).collect();
        assert_eq!(ok, [Some(1), Some(2), None, Some(4)]);
        assert_eq!(budget.busy.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn spawn_or_run_takes_a_free_thread_and_gives_it_back() {
        let budget = ThreadBudget::new(1);
        let me = thread::current().id();
        let release = AtomicBool::new(false);
        thread::scope(|s| {
            let first = budget.spawn_or_run(s, || {
                while !release.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(1));
                }
                thread::current().id()
            });
            // The one thread is taken: the second runs here.
            let second = budget.spawn_or_run(s, || thread::current().id());
            assert_eq!(second.join().unwrap(), me);
            release.store(true, Ordering::SeqCst);
            assert_ne!(first.join().unwrap(), me);
        });
        assert_eq!(budget.busy.load(Ordering::SeqCst), 0);
    }
}
