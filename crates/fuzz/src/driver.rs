//! Running inputs. In process, each input runs under `catch_unwind` with a
//! quiet panic hook that records the message and location. A panic cannot
//! catch an abort (an allocation failure) or a hang, so a full run is a
//! supervisor and a worker process: the worker publishes the index of the
//! input it is on in a shared page; if it dies, the supervisor knows the
//! input (inputs are regenerated from their index), saves it, and starts a
//! new worker after it; if the index stops moving for longer than the hang
//! limit, the supervisor kills the worker and records a hang.

use crate::corpus::Seed;
use crate::targets::{self, Outcome, Target};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counts of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub inputs: u64,
    pub rejected: u64,
    pub too_large: u64,
    pub built: u64,
    pub ran_partly: u64,
    pub ran_to_end: u64,
    pub panics: u64,
    pub aborts: u64,
    pub hangs: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.inputs += o.inputs;
        self.rejected += o.rejected;
        self.too_large += o.too_large;
        self.built += o.built;
        self.ran_partly += o.ran_partly;
        self.ran_to_end += o.ran_to_end;
        self.panics += o.panics;
        self.aborts += o.aborts;
        self.hangs += o.hangs;
    }
    pub fn defects(&self) -> u64 {
        self.panics + self.aborts + self.hangs
    }
    fn to_line(&self) -> String {
        format!(
            "stats {} {} {} {} {} {} {}",
            self.inputs,
            self.rejected,
            self.too_large,
            self.built,
            self.ran_partly,
            self.ran_to_end,
            self.panics
        )
    }
    fn from_line(line: &str) -> Option<Stats> {
        let v: Vec<u64> = line
            .strip_prefix("stats ")?
            .split(' ')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let [inputs, rejected, too_large, built, ran_partly, ran_to_end, panics] = v[..] else {
            return None;
        };
        Some(Stats {
            inputs,
            rejected,
            too_large,
            built,
            ran_partly,
            ran_to_end,
            panics,
            ..Stats::default()
        })
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} inputs: {} rejected with an error, {} over the per-input budget (not built), {} built (too large to run), {} run partly, {} run to the end; defects: {} panics, {} aborts, {} hangs",
            self.inputs,
            self.rejected,
            self.too_large,
            self.built,
            self.ran_partly,
            self.ran_to_end,
            self.panics,
            self.aborts,
            self.hangs
        )
    }
}

/// A worker's address-space limit unless `--mem-limit-mb` says otherwise,
/// MiB: an input that needs more aborts there, a defect.
pub const DEFAULT_MEM_LIMIT_MB: u64 = 4096;

/// This process's peak resident memory so far (`getrusage`), MiB.
pub fn peak_rss_mb() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_maxrss.max(0) as u64 / 1024
}

/// One defect: which input, what happened.
#[derive(Debug, Clone)]
pub struct Finding {
    pub index: u64,
    pub kind: &'static str,
    pub message: String,
    /// Panic location (file:line), the key findings are grouped by.
    pub location: String,
}

thread_local! {
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Replace the panic hook with one that records (message, location) quietly.
pub fn install_quiet_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "(non-string panic payload)".to_string()
        };
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some((message, location)));
    }));
}

/// Run one input; `Err((message, location))` if it panicked.
pub fn run_one(target: Target, input: &[u8], scratch: &Path) -> Result<Outcome, (String, String)> {
    LAST_PANIC.with(|p| p.borrow_mut().take());
    panic::catch_unwind(AssertUnwindSafe(|| targets::exec(target, input, scratch))).map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| ("(panic without hook)".into(), String::new()))
    })
}

/// Run inputs `from..to` in this process. Panics are caught, saved to
/// `findings` (if given) and returned. `at` receives each input's index
/// before it runs.
pub fn run_in_process(
    target: Target,
    corpus: &[Seed],
    seed: u64,
    from: u64,
    to: u64,
    findings: Option<&Path>,
    at: &mut dyn FnMut(u64),
) -> (Stats, Vec<Finding>) {
    install_quiet_panic_hook();
    let scratch = targets::scratch_dir();
    let mut stats = Stats::default();
    let mut found = Vec::new();
    // Save at most this many inputs per panic location (they are all counted).
    const SAVED_PER_LOCATION: usize = 3;
    let mut per_location: BTreeMap<String, usize> = BTreeMap::new();
    for index in from..to {
        at(index);
        let input = targets::input(target, corpus, seed, index);
        stats.inputs += 1;
        match run_one(target, &input, &scratch) {
            Ok(Outcome::Rejected) => stats.rejected += 1,
            Ok(Outcome::TooLarge) => stats.too_large += 1,
            Ok(Outcome::Built) => stats.built += 1,
            Ok(Outcome::RanPartly) => stats.ran_partly += 1,
            Ok(Outcome::RanToEnd) => stats.ran_to_end += 1,
            Err((message, location)) => {
                stats.panics += 1;
                let n = per_location.entry(location.clone()).or_default();
                *n += 1;
                if *n <= SAVED_PER_LOCATION {
                    if let Some(dir) = findings {
                        let small = minimise(target, &input, &location, &scratch);
                        save(
                            dir,
                            target,
                            seed,
                            index,
                            "panic",
                            &small,
                            &format!("{message}\nat {location}\n"),
                        );
                    }
                }
                found.push(Finding {
                    index,
                    kind: "panic",
                    message,
                    location,
                });
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    (stats, found)
}

/// Save a defect's input and message as `<kind>-<target>-s<seed>-i<index>.*`.
pub fn save(dir: &Path, target: Target, seed: u64, index: u64, kind: &str, input: &[u8], message: &str) {
    let _ = std::fs::create_dir_all(dir);
    let stem = format!("{kind}-{}-s{seed}-i{index}", target.name());
    let _ = std::fs::write(dir.join(format!("{stem}.{}", target.ext())), input);
    let _ = std::fs::write(dir.join(format!("{stem}.txt")), message);
}

/// Shrink a scenario that panics: drop keys and array elements of its TOML
/// tree while it still panics at the same place. Inputs that are not TOML
/// (byte mutations) and wire inputs are kept as they are.
pub fn minimise(target: Target, input: &[u8], location: &str, scratch: &Path) -> Vec<u8> {
    if target != Target::Scenarios {
        return input.to_vec();
    }
    let Ok(text) = std::str::from_utf8(input) else {
        return input.to_vec();
    };
    let Ok(mut tree) = text.parse::<toml::Table>() else {
        return input.to_vec();
    };
    let still_panics = |t: &toml::Table| -> bool {
        let Ok(s) = toml::to_string(t) else { return false };
        matches!(run_one(target, s.as_bytes(), scratch), Err((_, l)) if l == location)
    };
    if !still_panics(&tree) {
        return input.to_vec();
    }
    let mut budget = 2_000;
    let mut progress = true;
    while progress && budget > 0 {
        progress = false;
        let mut i = 0;
        loop {
            let mut candidate = toml::Value::Table(tree.clone());
            if !remove_nth(&mut candidate, &mut { i }) {
                break;
            }
            budget -= 1;
            let toml::Value::Table(c) = candidate else {
                unreachable!("the root stays a table")
            };
            if still_panics(&c) {
                tree = c;
                progress = true;
            } else {
                i += 1;
            }
            if budget == 0 {
                break;
            }
        }
    }
    toml::to_string(&tree)
        .map(String::into_bytes)
        .unwrap_or_else(|_| input.to_vec())
}

/// Remove the `n`-th removable child (table entry or array element) in
/// pre-order; false if there are fewer.
fn remove_nth(v: &mut toml::Value, n: &mut usize) -> bool {
    match v {
        toml::Value::Table(t) => {
            let keys: Vec<String> = t.keys().cloned().collect();
            for k in keys {
                if *n == 0 {
                    t.remove(&k);
                    return true;
                }
                *n -= 1;
                if remove_nth(t.get_mut(&k).unwrap(), n) {
                    return true;
                }
            }
            false
        }
        toml::Value::Array(a) => {
            for i in 0..a.len() {
                if *n == 0 {
                    a.remove(i);
                    return true;
                }
                *n -= 1;
                if remove_nth(&mut a[i], n) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

// --- Worker side ---------------------------------------------------------------

/// A page shared between supervisor and worker holding the worker's
/// current input index (u64::MAX before the first input).
struct SharedIndex {
    ptr: *mut AtomicU64,
}

impl SharedIndex {
    fn map(path: &Path, create: bool) -> std::io::Result<SharedIndex> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)?;
        file.set_len(8)?;
        use std::os::fd::AsRawFd;
        // SAFETY: an 8-byte shared mapping of a file we just sized to 8
        // bytes; page-aligned, so valid for an AtomicU64. The mapping
        // outlives the file handle (mmap keeps its own reference).
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let shared = SharedIndex {
            ptr: ptr as *mut AtomicU64,
        };
        if create {
            shared.set(u64::MAX);
        }
        Ok(shared)
    }
    fn set(&self, v: u64) {
        // SAFETY: ptr is a live, aligned mapping for the life of self.
        unsafe { (*self.ptr).store(v, Ordering::Release) }
    }
    fn get(&self) -> u64 {
        // SAFETY: as in set.
        unsafe { (*self.ptr).load(Ordering::Acquire) }
    }
}

impl Drop for SharedIndex {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in map.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, 8);
        }
    }
}

/// Cap the worker's address space, so a huge allocation fails (and aborts,
/// which the supervisor records) instead of swapping the machine.
fn limit_memory(mb: u64) {
    let bytes = mb.saturating_mul(1 << 20) as libc::rlim_t;
    let lim = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit reads a valid rlimit struct.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &lim);
    }
}

/// The worker: run `from..to`, publishing the index, print a stats line.
#[allow(clippy::too_many_arguments)]
pub fn worker(
    target: Target,
    corpus: &[Seed],
    seed: u64,
    from: u64,
    to: u64,
    findings: &Path,
    index_file: &Path,
    mem_limit_mb: u64,
) -> std::io::Result<()> {
    limit_memory(mem_limit_mb);
    let shared = SharedIndex::map(index_file, false)?;
    let (stats, found) = run_in_process(target, corpus, seed, from, to, Some(findings), &mut |i| {
        shared.set(i)
    });
    let mut out = std::io::stdout().lock();
    for f in &found {
        writeln!(
            out,
            "panic {} {} {}",
            f.index,
            f.location,
            f.message.replace('\n', " ")
        )?;
    }
    writeln!(out, "{}", stats.to_line())?;
    out.flush()
}

// --- Supervisor side -----------------------------------------------------------

/// Options of a supervised run.
pub struct RunOptions {
    pub target: Target,
    pub seed: u64,
    pub inputs: u64,
    pub findings: PathBuf,
    pub hang_s: f64,
    pub mem_limit_mb: u64,
    /// The corpus root the worker reads.
    pub root: PathBuf,
}

/// Run `inputs` inputs in worker processes, restarting after each abort or
/// hang. Progress goes to stderr. Returns the totals and every defect.
pub fn supervise(opts: &RunOptions, corpus: &[Seed]) -> std::io::Result<(Stats, Vec<Finding>)> {
    let exe = std::env::current_exe()?;
    std::fs::create_dir_all(&opts.findings)?;
    let index_file = opts.findings.join(format!(".index-{}", std::process::id()));
    let mut total = Stats::default();
    let mut found = Vec::new();
    let mut from = 0;
    let started = Instant::now();
    while from < opts.inputs {
        let shared = SharedIndex::map(&index_file, true)?;
        let mut child = Command::new(&exe)
            .args(["worker", "--target", opts.target.name()])
            .args(["--seed", &opts.seed.to_string()])
            .args(["--from", &from.to_string(), "--to", &opts.inputs.to_string()])
            .arg("--findings")
            .arg(&opts.findings)
            .arg("--index-file")
            .arg(&index_file)
            .args(["--mem-limit-mb", &opts.mem_limit_mb.to_string()])
            .arg("--root")
            .arg(&opts.root)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let out_thread = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        let err_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let mut last = (shared.get(), Instant::now());
        let mut last_report = Instant::now();
        let mut hung = false;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            std::thread::sleep(Duration::from_millis(50));
            let now = shared.get();
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed().as_secs_f64() > opts.hang_s && now != u64::MAX {
                hung = true;
                let _ = child.kill();
                break child.wait()?;
            }
            if last_report.elapsed() >= Duration::from_secs(30) && now != u64::MAX {
                last_report = Instant::now();
                let done = now;
                eprintln!(
                    "latlab-fuzz {}: input {done}/{} ({:.0} inputs/s)",
                    opts.target.name(),
                    opts.inputs,
                    done as f64 / started.elapsed().as_secs_f64()
                );
            }
        };
        let lines = out_thread.join().unwrap_or_default();
        let err_text = err_thread.join().unwrap_or_default();
        for line in &lines {
            if let Some(s) = Stats::from_line(line) {
                total.add(&s);
            } else if let Some(rest) = line.strip_prefix("panic ") {
                let mut parts = rest.splitn(3, ' ');
                let index = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                let location = parts.next().unwrap_or("").to_string();
                let message = parts.next().unwrap_or("").to_string();
                found.push(Finding {
                    index,
                    kind: "panic",
                    message,
                    location,
                });
            }
        }
        if status.success() && !hung {
            break;
        }
        // An abort or a hang at the published index: record it and go on after it.
        let index = shared.get();
        if index == u64::MAX {
            return Err(std::io::Error::other(format!(
                "the worker failed before its first input: {status}\n{err_text}"
            )));
        }
        let kind = if hung { "hang" } else { "abort" };
        let tail: String = err_text.lines().rev().take(5).collect::<Vec<_>>().join("\n");
        let message = if hung {
            format!("no progress for {} s", opts.hang_s)
        } else {
            format!("worker died: {status}; stderr: {tail}")
        };
        let input = targets::input(opts.target, corpus, opts.seed, index);
        save(
            &opts.findings,
            opts.target,
            opts.seed,
            index,
            kind,
            &input,
            &message,
        );
        eprintln!(
            "latlab-fuzz {}: {kind} at input {index}: {message}",
            opts.target.name()
        );
        // The inputs before it ran in the dead worker, whose stats line was
        // lost: count them as run (their panics, if any, were saved).
        total.inputs += index - from + 1;
        if hung {
            total.hangs += 1;
        } else {
            total.aborts += 1;
        }
        found.push(Finding {
            index,
            kind,
            message,
            location: String::new(),
        });
        from = index + 1;
    }
    let _ = std::fs::remove_file(&index_file);
    Ok((total, found))
}
