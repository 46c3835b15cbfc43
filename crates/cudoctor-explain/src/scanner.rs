//! Streaming scan of a log: bounded line reading, cleaning, matching, and picking the first
//! causal error. Memory stays bounded whatever the input size: one capped line buffer, a
//! window of a few lines for pending matches, and a fixed number of kept lines per signature.

use crate::clause::{self, Clause, Severity};
use crate::explanation::ScanStats;
use crate::gate::Gate;
use crate::normalize::{normalize, strip_log_prefix, Normalized};
use crate::prefilter::Prefilter;
use crate::signatures::{Role, SignatureDb};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{self, BufRead, Read};

/// Bytes of one line that are kept and examined; the rest of a longer line is read and dropped.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Lines after a triggering line that field extraction may look at (messages spread over lines).
pub const FOLLOW_LINES: usize = 3;
/// Bytes of each line kept in an extraction window.
const WINDOW_LINE_BYTES: usize = 4 * 1024;
/// Distinct lines kept per signature (the rest are only counted).
const KEPT_LINES_PER_SIGNATURE: usize = 5;
/// Ranks remembered per signature.
const MAX_RANKS: usize = 64;
/// Bytes of a matched line kept for display.
const DISPLAY_BYTES: usize = 600;

/// What reading one line did; the kept bytes are in `BoundedLines::line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineInfo {
    pub truncated: bool,
    /// Bytes consumed from the input for this line, including the newline.
    pub consumed: u64,
}

/// Reads `\n`-terminated lines, keeping at most `cap` bytes of each.
pub struct BoundedLines<R> {
    inner: R,
    cap: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> BoundedLines<R> {
    pub fn new(inner: R, cap: usize) -> Self {
        BoundedLines {
            inner,
            cap,
            buf: Vec::with_capacity(cap.min(8192)),
        }
    }

    /// The next line, `Ok(None)` at the end of input.
    ///
    /// Uses `read_until`, whose newline search is std's precompiled memchr: fast even in
    /// unoptimised builds, which matters for scanning hundreds of megabytes in tests.
    pub fn next_line(&mut self) -> io::Result<Option<LineInfo>> {
        self.buf.clear();
        let cap = self.cap as u64;
        let mut consumed = read_until_retry(&mut (&mut self.inner).take(cap), &mut self.buf)?;
        if consumed == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            return Ok(Some(LineInfo {
                truncated: false,
                consumed,
            }));
        }
        if consumed < cap {
            // End of input without a final newline.
            return Ok(Some(LineInfo {
                truncated: false,
                consumed,
            }));
        }
        // The line is longer than the cap: read and drop the rest of it, a chunk at a time.
        let mut scratch = Vec::with_capacity(64 * 1024);
        let mut truncated = false;
        loop {
            scratch.clear();
            let n = read_until_retry(&mut (&mut self.inner).take(64 * 1024), &mut scratch)?;
            consumed += n;
            if n == 0 {
                break;
            }
            if scratch.last() == Some(&b'\n') {
                // Only a newline right after the cap means the line was not cut.
                truncated |= n > 1;
                break;
            }
            truncated = true;
        }
        Ok(Some(LineInfo {
            truncated,
            consumed,
        }))
    }

    /// The kept bytes of the line last read (without its newline).
    pub fn line(&self) -> &[u8] {
        &self.buf
    }
}

fn read_until_retry<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<u64> {
    loop {
        match r.read_until(b'\n', buf) {
            Ok(n) => return Ok(n as u64),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Turns raw bytes into the text the patterns see: lossy UTF-8, no trailing CR, no ANSI
/// escape sequences, no other control characters. A bare CR inside a line (progress bars
/// redrawing themselves) separates segments, each examined on its own.
pub fn clean_segments(raw: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(raw);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let mut out = Vec::new();
    if !text.bytes().any(|b| b < 0x20 || b == 0x7f) {
        // The common case: nothing to strip.
        let trimmed = text.trim();
        if !trimmed.is_empty() {
            out.push(trimmed.to_string());
        }
        return out;
    }
    for segment in text.split('\r') {
        let cleaned = strip_ansi_and_controls(segment);
        let trimmed = cleaned.trim();
        if !trimmed.is_empty() {
            out.push(trimmed.to_string());
        }
    }
    out
}

fn strip_ansi_and_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.peek() {
                // CSI: ESC [ params final-byte(0x40..=0x7e)
                Some('[') => {
                    chars.next();
                    for n in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&n) {
                            break;
                        }
                    }
                }
                // OSC: ESC ] ... BEL or ESC \
                Some(']') => {
                    chars.next();
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' {
                            break;
                        }
                        if n == '\u{1b}' {
                            chars.next();
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            }
            continue;
        }
        if c == '\t' {
            out.push(' ');
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// Removes a distributed-launcher prefix and returns the rank it named:
/// `[rank3]:`, `[80746] [rank0]:`, `(VllmWorker rank=1 pid=2699412)`, `[1,0]<stderr>:`.
pub fn strip_rank_prefix(line: &str) -> (Option<u32>, &str) {
    let mut rest = line;
    // "[12345] " process-id prefix some launchers add before the rank tag
    if let Some(after) = rest.strip_prefix('[') {
        if let Some(close) = after.find(']') {
            let inner = after.get(..close).unwrap_or_default();
            if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_digit()) {
                rest = after.get(close + 1..).unwrap_or_default().trim_start();
            }
        }
    }
    if let Some(after) = rest.strip_prefix("[rank") {
        if let Some(close) = after.find("]:") {
            if let Ok(rank) = after.get(..close).unwrap_or_default().parse::<u32>() {
                return (
                    Some(rank),
                    after.get(close + 2..).unwrap_or_default().trim_start(),
                );
            }
        }
    }
    if let Some(after) = rest.strip_prefix('(') {
        if let Some(close) = after.find(')') {
            let inner = after.get(..close).unwrap_or_default();
            if inner.contains("pid=") {
                let rank = inner
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("rank="))
                    .and_then(|r| r.parse().ok());
                return (
                    rank,
                    after.get(close + 1..).unwrap_or_default().trim_start(),
                );
            }
        }
    }
    // mpirun --tag-output: "[1,0]<stderr>:"
    if let Some(after) = rest.strip_prefix('[') {
        if let Some(close) = after.find(']') {
            let inner = after.get(..close).unwrap_or_default();
            if let Some((_, rank)) = inner.split_once(',') {
                if let Ok(rank) = rank.parse::<u32>() {
                    let tail = after.get(close + 1..).unwrap_or_default();
                    let tail = tail
                        .strip_prefix("<stderr>:")
                        .or_else(|| tail.strip_prefix("<stdout>:"))
                        .unwrap_or(tail);
                    return (Some(rank), tail.trim_start());
                }
            }
        }
    }
    (None, rest)
}

/// A line as a report shows it: its secrets replaced (`cudoctor_types::secret`), shortened to
/// `DISPLAY_BYTES`.
pub(crate) fn shown(line: &str) -> String {
    shorten(
        &cudoctor_types::secret::redact_text(shorten_ref(line, 4 * DISPLAY_BYTES)),
        DISPLAY_BYTES,
    )
}

pub(crate) fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", s.get(..end).unwrap_or_default())
}

/// The first accepted match of a signature.
#[derive(Debug, Clone)]
pub struct Hit {
    pub line_no: u64,
    pub text: String,
    pub rank: Option<u32>,
    pub fields: BTreeMap<String, String>,
}

/// Everything the scan remembers about one signature.
#[derive(Debug, Clone, Default)]
pub struct SignatureSeen {
    pub first: Option<Hit>,
    pub count: u64,
    /// Up to KEPT_LINES_PER_SIGNATURE distinct lines: (line_no, text, rank).
    pub lines: Vec<(u64, String, Option<u32>)>,
    pub ranks: BTreeSet<u32>,
}

/// A triggered signature waiting for the lines that follow it.
struct Pending {
    sig: usize,
    line_no: u64,
    text: String,
    rank: Option<u32>,
    window: Vec<String>,
}

/// A line read as a clause (see [`crate::clause`]).
#[derive(Debug, Clone)]
pub struct ClauseHit {
    pub line_no: u64,
    pub text: String,
    pub rank: Option<u32>,
    pub clause: Clause,
    pub fields: BTreeMap<String, String>,
    /// Lines read as the same category with the same severity.
    pub count: u64,
}

/// What the scanner itself looks for in a line, for the gate: an exception naming an attention
/// operator (`State::of_the_attention_operator`).
pub const LITERALS: [&str; 1] = ["attention"];

/// Whether `line` is an exception whose message names an attention operator (xFormers'
/// `memory_efficient_attention_forward`, FlashAttention's): the reasons listed under it are
/// said of that operator.
pub fn names_an_attention_operator(line: &str) -> bool {
    clause::exception(line).is_some_and(|(_, message)| message_names_attention(message))
}

/// Whether an exception's message names an attention operator.
fn message_names_attention(message: &str) -> bool {
    clause::find_ascii_ci(message, "attention").is_some()
}

/// A clause of a GPU refused, read under an attention operator's exception: the operator
/// refuses the GPU, attention falls back to another kernel, and the GPU's other code is not in
/// question.
pub fn refused_by_attention(c: Clause) -> Clause {
    if c.category != crate::category::Category::NoKernelImage {
        return c;
    }
    Clause {
        category: crate::category::Category::SdpaFallback,
        subject: clause::Subject::Attention,
        ..c
    }
}

/// Lines after an exception that may list its reasons (xFormers lists one per kernel it tried,
/// each with the inputs it refused: a few dozen lines).
const REASON_LINES: u64 = 60;

/// Lines from the start of the input that are also read with their typos corrected: hand-typed
/// text is short, and a log's own lines are machine-written.
const TYPED_LINES: u64 = 64;
/// Lines of a short input read together as one report.
pub const HEAD_LINES: u64 = 30;
/// Bytes of those lines kept.
const HEAD_BYTES: usize = 8 * 1024;
/// Longest line corrected for typos.
const TYPED_LINE_BYTES: usize = 2048;

/// What a scan found, before it is turned into an explanation.
#[derive(Debug, Default)]
pub struct ScanOutcome {
    /// Indexed like the database's signatures.
    pub seen: Vec<SignatureSeen>,
    /// The first line of each (category, severity) read as a clause: bounded by the number of
    /// pairs.
    pub clauses: Vec<ClauseHit>,
    /// The first line that speaks of a container, Kubernetes or WSL: a driver that cannot be
    /// reached there is the runtime's doing.
    pub container_line: Option<u64>,
    /// The first line that names a container runtime, Kubernetes or a container's own shape
    /// (a prompt, Compose's log), not only WSL: under WSL alone a driver that cannot be
    /// reached is the loader's (its libraries live in `/usr/lib/wsl/lib`).
    pub runtime_line: Option<u64>,
    /// The first line that names a runtime that binds the host's driver only when asked
    /// (Singularity's and Apptainer's `--nv`): there a driver that looks too old may be none.
    pub driver_on_request_line: Option<u64>,
    /// The kernel log's Xid events, per GPU.
    pub xids: crate::xid::XidLog,
    /// The binaries the log names.
    pub named: crate::named::Named,
    /// What the log says of the machine's state (a resume from suspend, the card's clocks or
    /// power).
    pub host: crate::host_state::HostContext,
    /// The cards, builds and drivers the report's setup names ([`crate::setup`]).
    pub cards: crate::setup::Setup,
    /// What the report says, in prose, of whose the fault is ([`crate::testimony`]).
    pub testimony: crate::testimony::Testimonies,
    /// The first line that says the GPU, the driver or CUDA failed, whatever it names.
    pub device_failure_line: Option<u64>,
    /// Where the log's start shows the GPU in use and the run going on.
    pub gpu_ran: crate::gpu_ran::GpuRan,
    /// The last Python exception of the log (`SomeError: ...`): its line, its text, and whether
    /// it is a program's own error that names nothing of the stack ([`clause::is_program_error`]).
    pub last_exception: Option<(u64, String, bool)>,
    /// The first lines of a short input, joined (bounded): a hand-typed report says its subject
    /// in one sentence and its failure in another.
    pub head: String,
    pub stats: ScanStats,
    /// Lines that were not blank after cleaning.
    pub nonblank_lines: u64,
}

/// The scan's working state: pending matches and what was found so far.
struct State<'a> {
    db: &'a SignatureDb,
    prefilter: &'a Prefilter,
    pending: VecDeque<Pending>,
    out: ScanOutcome,
    /// The previous segment (bounded) and the signatures it triggered, for wrapped messages.
    prev: String,
    prev_candidate: bool,
    prev_hits: Vec<usize>,
    /// The installed packages the last Python traceback frames ran in, oldest first (the last
    /// [`MAX_FRAMES`], each bounded; empty for the program's own files), for the exception that
    /// follows ([`clause::frame_package`]).
    frames: VecDeque<String>,
    /// A line whose message stops on the word that introduces a name ("please set environment
    /// variable"), held back (bounded) with its line and rank: a terminal or a build wrapped it
    /// before the name, which the next line begins with (`CUDNN_HOME to ...`).
    held: Option<(u64, String, Option<u32>)>,
    /// The line of the last exception that names an attention operator ("No operator found for
    /// `memory_efficient_attention_forward`"), while no other exception has followed: the
    /// reasons listed under it ("requires device with capability > (8, 0) but your GPU has
    /// capability (7, 5)") are said of that operator, not of every kernel the GPU runs.
    attention_exception: Option<u64>,
    /// Hashes of quiet line bodies (bounded: cleared when full).
    quiet: std::collections::HashSet<u64>,
    /// Hashes of line bodies that trigger signatures, with those signatures (bounded).
    hot: std::collections::HashMap<u64, Vec<usize>>,
}

/// Traceback frames remembered for the exception that follows them.
const MAX_FRAMES: usize = 8;

/// Quiet line bodies remembered.
const MAX_QUIET: usize = 1 << 16;

/// The body of a line without the `host:pid:tid [rank] ` prefix NCCL writes before each line.
fn quiet_body(text: &str) -> &str {
    let b = text.as_bytes();
    let Some(space) = b.iter().take(128).position(|&c| c == b' ') else {
        return text;
    };
    let head = &b[..space];
    let colons = head.iter().filter(|&&c| c == b':').count();
    let rest = text.get(space + 1..).unwrap_or_default();
    if colons == 2 && rest.starts_with('[') {
        if let Some(close) = rest.find("] ") {
            return rest.get(close + 2..).unwrap_or_default();
        }
    }
    text
}

/// FNV-1a, 64 bits.
fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A line shorter than this is not taken for the first half of a terminal-wrapped message.
const WRAP_MIN_CHARS: usize = 60;

impl State<'_> {
    /// A repeat of a line body whose signatures have all recorded what they keep (their first
    /// match with its fields, every distinct line they show): only counted again, with its rank.
    fn repeat_hot(&mut self, key: u64, rank: Option<u32>) -> bool {
        let Some(sigs) = self.hot.get(&key) else {
            return false;
        };
        let settled = sigs.iter().all(|&i| {
            self.out
                .seen
                .get(i)
                .is_some_and(|s| s.first.is_some() && s.lines.len() >= KEPT_LINES_PER_SIGNATURE)
        });
        if !settled || !self.pending.is_empty() {
            return false;
        }
        for &i in sigs {
            if let Some(entry) = self.out.seen.get_mut(i) {
                entry.count += 1;
                if let Some(r) = rank {
                    if entry.ranks.len() < MAX_RANKS {
                        entry.ranks.insert(r);
                    }
                }
            }
        }
        true
    }

    fn record_clause(&mut self, line_no: u64, text: &str, rank: Option<u32>, clause: Clause) {
        if let Some(hit) =
            self.out.clauses.iter_mut().find(|h| {
                h.clause.category == clause.category && h.clause.severity == clause.severity
            })
        {
            hit.count += 1;
            return;
        }
        self.out.clauses.push(ClauseHit {
            line_no,
            text: shown(text),
            rank,
            fields: clause::fields(text),
            clause,
            count: 1,
        });
    }

    /// A GPU refused on a line listed under an attention operator's exception (within
    /// [`REASON_LINES`]) is refused by that operator: attention falls back to another kernel,
    /// and the GPU's other code is not in question.
    fn of_the_attention_operator(&self, line_no: u64, c: Clause) -> Clause {
        let under = self
            .attention_exception
            .is_some_and(|at| at < line_no && line_no - at <= REASON_LINES);
        if under {
            refused_by_attention(c)
        } else {
            c
        }
    }

    /// Feeds one cleaned, non-empty segment of line `line_no`: normalised (quotes, full-width
    /// forms, escaped newlines...) into one or more segments first.
    fn feed(&mut self, line_no: u64, segment: &str) {
        match normalize(segment) {
            Normalized::Same(s) => self.feed_normalized(line_no, s),
            Normalized::Rewritten(v) => {
                for s in &v {
                    self.feed_normalized(line_no, s);
                }
            }
        }
    }

    fn feed_normalized(&mut self, line_no: u64, segment: &str) {
        self.out.nonblank_lines += 1;
        let (rank, text) = strip_rank_prefix(strip_log_prefix(segment));
        let text = strip_log_prefix(text);
        self.out.gpu_ran.feed(line_no, text);
        if let Some((held_no, held, held_rank)) = self.held.take() {
            let joined = clause::begins_with_a_name(text).then(|| format!("{held} {text}"));
            self.read_held(held_no, joined.as_deref().unwrap_or(&held), held_rank);
        }
        // Before the repeat test: a traceback repeats its frames.
        if let Some(package) = clause::frame_package(text) {
            if self.frames.len() >= MAX_FRAMES {
                self.frames.pop_front();
            }
            self.frames.push_back(shorten(package, 64));
        }
        // Feed the windows of earlier triggers first: this line follows them.
        if !self.pending.is_empty() {
            let window_piece = shorten(text, WINDOW_LINE_BYTES);
            for p in self.pending.iter_mut() {
                p.window.push(window_piece.clone());
            }
            while self
                .pending
                .front()
                .is_some_and(|p| p.window.len() > FOLLOW_LINES)
            {
                if let Some(done) = self.pending.pop_front() {
                    complete(done, self.db, &mut self.out.seen);
                }
            }
        }
        // A line body already read and found quiet (no signature, clause, join or Xid) is
        // skipped: logs repeat the same lines, an NCCL_DEBUG=INFO log millions of times.
        let quiet_key = (line_no > TYPED_LINES).then(|| fnv1a(quiet_body(text).as_bytes()));
        if let Some(k) = quiet_key {
            if self.repeat_hot(k, rank) {
                self.out.stats.repeated_lines += 1;
                self.remember(text, true, Vec::new());
                return;
            }
            if self.quiet.contains(&k) {
                self.out.stats.repeated_lines += 1;
                self.remember(text, false, Vec::new());
                return;
            }
        }
        // Whether this line recorded what a repeat must record again: an Xid event, or a
        // clause that can answer (informational clauses never do).
        let mut loud = false;
        let candidate = self.prefilter.may_match(text);
        let mut own: Vec<usize> = if candidate {
            self.out.stats.candidate_lines += 1;
            self.db.triggered_with(text, self.prefilter)
        } else {
            Vec::new()
        };
        let mut clause_text: Cow<'_, str> = Cow::Borrowed(text);
        if line_no <= TYPED_LINES && own.is_empty() && text.len() <= TYPED_LINE_BYTES {
            if let Some(corrected) = clause::correct_typos(text) {
                if self.prefilter.may_match(&corrected) {
                    own = self.db.triggered_with(&corrected, self.prefilter);
                }
                clause_text = Cow::Owned(corrected);
            }
        }
        self.out.named.feed(line_no, text);
        self.out.host.feed(line_no, text);
        self.out.cards.feed(line_no, text);
        self.out.testimony.feed(line_no, text);
        if line_no <= HEAD_LINES && self.out.head.len() + text.len() < HEAD_BYTES {
            self.out.head.push_str(&clause_text);
            self.out.head.push_str(" . ");
        }
        // A Dockerfile, a container's shell prompt or Docker Compose's log is quoted in a
        // report's first lines, which the gate always reads in full; looking there only keeps
        // "FROM" and the prompt's shapes out of the gate's literals.
        if line_no <= TYPED_LINES
            && self.out.container_line.is_none()
            && (clause::is_dockerfile_from(text) || clause::is_container_line(text))
        {
            self.out.container_line = Some(line_no);
            self.out.runtime_line = Some(line_no);
        }
        let exception = clause::exception(&clause_text);
        if let Some((_, message)) = exception {
            // The line alone says no cause, so it is no clause of its own.
            self.attention_exception = message_names_attention(message).then_some(line_no);
        }
        if clause::mentions_any(&clause_text) {
            let words = clause::words(&clause_text);
            if self.out.container_line.is_none() && words.has(clause::Subject::Container) {
                self.out.container_line = Some(line_no);
            }
            if self.out.runtime_line.is_none()
                && words.has(clause::Subject::Container)
                && clause::names_container_beside_wsl(&clause_text)
            {
                self.out.runtime_line = Some(line_no);
            }
            if self.out.driver_on_request_line.is_none()
                && words.has(clause::Subject::Container)
                && clause::binds_driver_on_request(&clause_text)
            {
                self.out.driver_on_request_line = Some(line_no);
            }
            if self.out.device_failure_line.is_none()
                && !words.failures.is_empty()
                && [
                    clause::Subject::Gpu,
                    clause::Subject::Driver,
                    clause::Subject::DriverLibrary,
                    clause::Subject::Hardware,
                ]
                .iter()
                .any(|s| words.has(*s))
            {
                self.out.device_failure_line = Some(line_no);
            }
            let is_exception = exception.is_some();
            if is_exception {
                // A message a signature reads ("ValueError: No available memory for the cache
                // blocks") is the stack's, whatever class raised it.
                let program = own.is_empty() && clause::is_program_error(&clause_text, &words);
                self.out.last_exception = Some((line_no, shown(&clause_text), program));
            }
            if words.has(clause::Subject::Hardware) {
                self.out.xids.feed(line_no, &clause_text);
                loud = true;
            }
            let gap = words
                .gap_words
                .then(|| clause::api_gap(&clause_text))
                .flatten()
                .and_then(|(module, name)| {
                    let frames = self.frames.make_contiguous();
                    let caller = clause::caller_package(frames, module)?;
                    Some((module, name, caller.to_string()))
                });
            if let Some((module, name, caller)) = gap {
                // One installed package asks another of the stack for a name its release
                // lacks: the two releases were not made for each other.
                let c = Clause {
                    category: crate::category::Category::VersionSuffixMismatch,
                    subject: clause::Subject::Companion,
                    failure: clause::Failure::Mismatch,
                    severity: clause::severity(&clause_text),
                };
                loud = true;
                self.record_clause(line_no, &clause_text, rank, c);
                if let Some(hit) = self.out.clauses.iter_mut().find(|h| h.line_no == line_no) {
                    hit.fields.insert("api_module".into(), module.to_string());
                    hit.fields.insert("api_name".into(), name.to_string());
                    hit.fields.insert("api_caller".into(), caller);
                }
            } else if clause::ends_before_a_name(&clause_text) {
                loud = true;
                self.held = Some((line_no, shorten(&clause_text, WINDOW_LINE_BYTES), rank));
            } else if let Some(c) = clause::from_words(&clause_text, &words) {
                let c = self.of_the_attention_operator(line_no, c);
                loud |= c.severity != Severity::Info;
                self.record_clause(line_no, &clause_text, rank, c);
            }
            if is_exception {
                self.frames.clear();
            }
        }
        // A message wrapped by a terminal or a web page continues on the next line: a long line
        // followed by one that goes on in lower case is also read as one line. The join is only
        // matched when one half is a candidate or a literal crosses the break (checked on a
        // short window around it, so ordinary logs pay little for this).
        let mut joined_hits: Vec<usize> = Vec::new();
        let mut joined_text = String::new();
        if self.prev.len() >= WRAP_MIN_CHARS && text.starts_with(|c: char| c.is_ascii_lowercase()) {
            let reach = self.prefilter.longest_literal();
            let crossing = || {
                let tail = tail_ref(&self.prev, reach);
                let head = shorten_ref(text, reach);
                self.prefilter.may_match(&format!("{tail} {head}"))
            };
            if candidate || self.prev_candidate || crossing() {
                // Re-flowed text breaks between words; a terminal breaks inside one ("OpTy" /
                // "pe=BROADCAST"), so the halves are also read without the space.
                for glue in [" ", ""] {
                    let text_joined = format!("{}{glue}{text}", self.prev);
                    let hits: Vec<usize> = self
                        .db
                        .triggered_with(&text_joined, self.prefilter)
                        .into_iter()
                        .filter(|s| {
                            !own.contains(s)
                                && !self.prev_hits.contains(s)
                                && !joined_hits.contains(s)
                        })
                        .collect();
                    if !hits.is_empty() && joined_hits.is_empty() {
                        joined_text = text_joined;
                    }
                    joined_hits.extend(hits);
                }
            }
        }
        let window_piece = shorten(text, WINDOW_LINE_BYTES);
        for &sig in &joined_hits {
            self.pending.push_back(Pending {
                sig,
                line_no: line_no.saturating_sub(1).max(1),
                text: shown(&joined_text),
                rank,
                window: vec![shorten(&joined_text, WINDOW_LINE_BYTES)],
            });
        }
        for &sig in &own {
            self.pending.push_back(Pending {
                sig,
                line_no,
                text: shown(text),
                rank,
                window: vec![window_piece.clone()],
            });
        }
        if let Some(k) = quiet_key {
            if !loud && joined_hits.is_empty() {
                if own.is_empty() {
                    if self.quiet.len() >= MAX_QUIET {
                        self.quiet.clear();
                    }
                    self.quiet.insert(k);
                } else if own.iter().all(|&i| {
                    self.db.get(i).is_some_and(|s| {
                        s.require_equal.is_empty() && s.require_different.is_empty()
                    })
                }) {
                    if self.hot.len() >= MAX_QUIET {
                        self.hot.clear();
                    }
                    self.hot.insert(k, own.clone());
                }
            }
        }
        self.remember(text, candidate, own);
    }

    /// Reads a line the gate passed over (no reader finds anything in it), unless it may
    /// continue the previous line's wrapped message: then `false`, and it is read in full.
    fn pass_over(&mut self, line_no: u64, segment: &str) -> bool {
        // The line as the readers would see it: on a line the gate passes, normalisation only
        // collapses runs of spaces, into one segment (anything else is read in full). Most
        // such lines have no run to collapse: they are taken as they are, without the call.
        if !segment.contains("  ") {
            return self.pass_over_normalized(line_no, segment);
        }
        let normalized = normalize(segment);
        let segment = match &normalized {
            Normalized::Same(s) => *s,
            Normalized::Rewritten(v) => match v.as_slice() {
                [one] => one.as_str(),
                _ => return false,
            },
        };
        self.pass_over_normalized(line_no, segment)
    }

    /// [`Self::pass_over`] of a line as the readers see it.
    fn pass_over_normalized(&mut self, line_no: u64, segment: &str) -> bool {
        let (_, text) = strip_rank_prefix(strip_log_prefix(segment));
        let text = strip_log_prefix(text);
        // A held line is read with this one, or alone before it.
        if self.held.is_some() {
            return false;
        }
        if self.prev.len() >= WRAP_MIN_CHARS && text.starts_with(|c: char| c.is_ascii_lowercase()) {
            return false;
        }
        self.out.nonblank_lines += 1;
        self.out.stats.passed_over_lines += 1;
        self.out.gpu_ran.feed(line_no, text);
        self.remember(text, false, Vec::new());
        true
    }

    /// Reads the clause of a held line (joined with the name it was wrapped before, or alone).
    fn read_held(&mut self, line_no: u64, text: &str, rank: Option<u32>) {
        if let Some(c) = clause::read(text) {
            self.record_clause(line_no, text, rank, c);
        }
    }

    /// Keeps this line as the previous one, for the next line's wrapped-message join.
    fn remember(&mut self, text: &str, candidate: bool, hits: Vec<usize>) {
        self.prev.clear();
        if text.len() >= WRAP_MIN_CHARS {
            self.prev.push_str(shorten_ref(text, WINDOW_LINE_BYTES));
        }
        self.prev_candidate = candidate;
        self.prev_hits = hits;
    }
}

/// The last `max` bytes of `s` (or fewer, at a character boundary).
pub(crate) fn tail_ref(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s.get(start..).unwrap_or_default()
}

/// `s` cut to at most `max` bytes at a character boundary, without an ellipsis.
pub(crate) fn shorten_ref(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// Whether the gate is worth its look at the next line. In a stretch where it passes nothing
/// over (an NCCL_DEBUG=INFO log: every line names NCCL) its look is a pass over each line that
/// buys nothing, so after a run of lines it could not pass over it looks at one line in
/// `SPARSE_EVERY` until one passes again. Which lines it looks at changes how fast, never what is
/// found: a line it does not look at is read in full.
#[derive(Debug, Default)]
struct GateOdds {
    /// Lines in a row the gate could not pass over.
    misses: u32,
    /// Lines since the last look, while sparse.
    skipped: u32,
}

/// Lines in a row the gate must fail before it looks sparsely.
const GATE_MISSES_BEFORE_SPARSE: u32 = 64;
/// While sparse, one line in this many is looked at.
const SPARSE_EVERY: u32 = 16;

impl GateOdds {
    fn worth_a_look(&mut self) -> bool {
        if self.misses < GATE_MISSES_BEFORE_SPARSE {
            return true;
        }
        self.skipped += 1;
        if self.skipped >= SPARSE_EVERY {
            self.skipped = 0;
            return true;
        }
        false
    }

    fn saw(&mut self, passed: bool) {
        if passed {
            self.misses = 0;
        } else {
            self.misses = self.misses.saturating_add(1);
        }
    }
}

/// Scans `input` against `db`. Lines `gate` passes over are only counted and kept as the
/// previous line (for a wrapped message's join); `Gate::default()` reads every line in full.
pub fn scan<R: BufRead>(
    input: R,
    db: &SignatureDb,
    prefilter: &Prefilter,
    gate: &Gate,
) -> ScanOutcome {
    let out = ScanOutcome {
        seen: vec![SignatureSeen::default(); db.signatures.len()],
        ..Default::default()
    };
    let mut state = State {
        db,
        prefilter,
        pending: VecDeque::new(),
        out,
        prev: String::new(),
        prev_candidate: false,
        prev_hits: Vec::new(),
        frames: VecDeque::new(),
        held: None,
        attention_exception: None,
        quiet: std::collections::HashSet::new(),
        hot: std::collections::HashMap::new(),
    };
    let mut reader = BoundedLines::new(input, MAX_LINE_BYTES);
    let mut line_no: u64 = 0;
    let mut gate_odds = GateOdds::default();
    loop {
        let info = match reader.next_line() {
            Ok(Some(info)) => info,
            Ok(None) => break,
            Err(e) => {
                state.out.stats.read_error = Some(e.to_string());
                break;
            }
        };
        line_no += 1;
        state.out.stats.lines = line_no;
        state.out.stats.bytes += info.consumed;
        if info.truncated {
            state.out.stats.truncated_lines += 1;
        }
        let raw = reader.line();
        if line_no > TYPED_LINES && state.pending.is_empty() && gate_odds.worth_a_look() {
            let body = raw.trim_ascii();
            let passes = gate.passes_over(body);
            gate_odds.saw(passes);
            if passes {
                // UTF-8 without control bytes (the gate says so).
                let text = std::str::from_utf8(body).unwrap_or_default();
                if text.is_empty() || state.pass_over(line_no, text) {
                    continue;
                }
            }
        }
        let text = String::from_utf8_lossy(raw);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if text.bytes().any(|b| b < 0x20 || b == 0x7f) {
            if raw.contains(&0) {
                state.out.stats.binary_lines += 1;
            }
            for segment in clean_segments(raw) {
                state.feed(line_no, &segment);
            }
        } else {
            // The common case: nothing to strip, nothing to allocate.
            let trimmed = text.trim();
            if !trimmed.is_empty() {
                state.feed(line_no, trimmed);
            }
        }
    }
    if let Some((held_no, held, held_rank)) = state.held.take() {
        state.read_held(held_no, &held, held_rank);
    }
    let State {
        db,
        mut pending,
        mut out,
        ..
    } = state;
    while let Some(done) = pending.pop_front() {
        complete(done, db, &mut out.seen);
    }
    out
}

/// Extracts the fields of a finished pending match and records it if its constraints hold.
fn complete(p: Pending, db: &SignatureDb, seen: &mut [SignatureSeen]) {
    let Some(sig) = db.get(p.sig) else {
        return;
    };
    let first_line = p.window.first().map(String::as_str).unwrap_or_default();
    let mut fields = BTreeMap::new();
    for re in &sig.patterns {
        sig.collect_fields(re, first_line, &mut fields);
    }
    let joined = p.window.join(" ");
    for re in &sig.extract {
        sig.collect_fields(re, &joined, &mut fields);
    }
    if !sig.constraints_hold(&fields) {
        return;
    }
    let Some(entry) = seen.get_mut(p.sig) else {
        return;
    };
    entry.count += 1;
    if let Some(rank) = p.rank {
        if entry.ranks.len() < MAX_RANKS {
            entry.ranks.insert(rank);
        }
    }
    if entry.lines.len() < KEPT_LINES_PER_SIGNATURE
        && !entry.lines.iter().any(|(_, t, _)| *t == p.text)
    {
        entry.lines.push((p.line_no, p.text.clone(), p.rank));
    }
    if entry.first.is_none() {
        entry.first = Some(Hit {
            line_no: p.line_no,
            text: p.text,
            rank: p.rank,
            fields,
        });
    }
}

/// Picks the answer: the earliest `cause`; else the earliest `symptom`; else the earliest
/// `warning`. On the same line, the more confident signature wins. `context` never wins.
pub fn pick_winner(db: &SignatureDb, seen: &[SignatureSeen]) -> Option<usize> {
    let mut best: Option<(Role, u64, i64, usize)> = None;
    for (index, s) in seen.iter().enumerate() {
        let (Some(hit), Some(sig)) = (s.first.as_ref(), db.get(index)) else {
            continue;
        };
        if sig.role == Role::Context {
            continue;
        }
        // Higher confidence first on ties: negate a fixed-point value.
        let key = (
            sig.role,
            hit.line_no,
            -((sig.confidence * 1000.0) as i64),
            index,
        );
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map(|(_, _, _, index)| index)
}

/// The clause that answers: a line that says what failed before one that only says that
/// something failed, however loud the latter ("error: command 'nvcc' failed with exit status 1"
/// is the wrapper of "unable to execute '.../nvcc': No such file or directory"), warnings
/// last; then the most serious line (a fatal line before an error line); then, at the same
/// severity, again what failed before that it failed ("Call to cuLinkAddData results in
/// UNKNOWN_CUDA_ERROR" / "Unsupported .version 8.1"),
/// and a line that says why the GPU is not used before one that says only that it is not ("no
/// usable GPU found" / "compiled without GPU support"), then the earliest.
pub fn pick_clause(clauses: &[ClauseHit]) -> Option<&ClauseHit> {
    clauses
        .iter()
        .filter(|h| h.clause.severity != Severity::Info || info_answers(&h.clause))
        .min_by_key(|h| {
            (
                h.clause.severity >= Severity::Warning,
                h.clause.failure == clause::Failure::Failed,
                h.clause.severity,
                h.clause.failure == clause::Failure::NotAvailable,
                h.line_no,
            )
        })
}

/// An informational line that still answers when nothing louder does: a program reporting
/// at INFO level that it found no GPU it can use or that its build has no CUDA (Ollama's
/// `level=INFO ... msg="no compatible GPUs were discovered"`). NCCL's INFO lines never do.
fn info_answers(c: &Clause) -> bool {
    c.subject != clause::Subject::Nccl
        && matches!(
            c.failure,
            clause::Failure::NotAvailable | clause::Failure::NotCompiled
        )
}

/// Whether a line's wording is no more than a warning.
pub fn is_warning_line(text: &str) -> bool {
    clause::severity(text) == Severity::Warning
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn bounded_lines_cap_and_consume() {
        let mut data = vec![b'a'; 100];
        data.push(b'\n');
        data.extend_from_slice(b"short\r\nlast");
        let mut r = BoundedLines::new(Cursor::new(data), 10);
        let first = r.next_line().ok().flatten();
        assert_eq!(
            first,
            Some(LineInfo {
                truncated: true,
                consumed: 101
            })
        );
        assert_eq!(r.line().len(), 10);
        let second = r.next_line().ok().flatten();
        assert_eq!(
            second,
            Some(LineInfo {
                truncated: false,
                consumed: 7
            })
        );
        assert_eq!(r.line(), b"short\r");
        assert!(r.next_line().ok().flatten().is_some());
        assert_eq!(r.line(), b"last");
        assert!(matches!(r.next_line(), Ok(None)));
        // A line exactly as long as the cap is not truncated.
        let mut r = BoundedLines::new(Cursor::new(b"0123456789\nx".to_vec()), 10);
        assert_eq!(
            r.next_line().ok().flatten().map(|i| i.truncated),
            Some(false)
        );
    }

    #[test]
    fn cleaning_removes_colour_and_splits_cr() {
        let segs = clean_segments(b"\x1b[31mERROR\x1b[0m: boom\x1b]0;title\x07 ok\r");
        assert_eq!(segs, vec!["ERROR: boom ok"]);
        let segs = clean_segments(b" 10%|##  |\r100%|####|\rRuntimeError: x");
        assert_eq!(segs.last().map(String::as_str), Some("RuntimeError: x"));
        let segs = clean_segments(&[0xff, 0xfe, b'o', b'k', 0x00]);
        assert_eq!(segs, vec!["\u{fffd}\u{fffd}ok"]);
    }

    #[test]
    fn rank_prefixes() {
        assert_eq!(
            strip_rank_prefix("[rank3]: RuntimeError: x"),
            (Some(3), "RuntimeError: x")
        );
        assert_eq!(
            strip_rank_prefix("[80746] [rank0]:[E321 02:07] W"),
            (Some(0), "[E321 02:07] W")
        );
        assert_eq!(
            strip_rank_prefix("(VllmWorker rank=1 pid=26) ERROR x"),
            (Some(1), "ERROR x")
        );
        assert_eq!(
            strip_rank_prefix("(RayWorkerWrapper pid=11305) ERROR x"),
            (None, "ERROR x")
        );
        assert_eq!(strip_rank_prefix("[1,2]<stderr>:boom"), (Some(2), "boom"));
        assert_eq!(
            strip_rank_prefix("[WARNING] plain"),
            (None, "[WARNING] plain")
        );
    }

    /// A GPU refused in the reasons listed under an attention operator's exception is that
    /// operator's refusal (attention falls back), in a long log and in a short report alike;
    /// the same refusal without the operator above it is the GPU's code, and an operator's
    /// exception far above it (another block) lends it nothing.
    #[test]
    fn a_gpu_refused_under_an_attention_operator_is_its_fallback() {
        use crate::{explain_str, Category};
        let block = "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n     query : shape=(2, 1024, 8, 64) (torch.float16)\n`fa2F@2.5.7` is not supported because:\n    requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)\n";
        assert_eq!(explain_str(block).category, Category::SdpaFallback);
        let long = format!("{}{block}", "step 1 loss 0.5\n".repeat(40));
        assert_eq!(explain_str(&long).category, Category::SdpaFallback);
        let alone = "requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)\n";
        assert_eq!(explain_str(alone).category, Category::NoKernelImage);
        let far = format!(
            "{}{}{alone}",
            block.lines().next().unwrap_or_default(),
            "\nstep 1 loss 0.5".repeat(80) + "\n"
        );
        assert_eq!(explain_str(&far).category, Category::NoKernelImage);
    }
}
