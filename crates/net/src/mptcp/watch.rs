//! `latlab-net mptcp-watch`: the path manager's events as JSON lines on
//! stdout, one per event, each with the wall-clock time it was read
//! (`time_unix_ns`) and the decoded fields ([`super::pm_events::PmEvent`]).
//! What `ip mptcp monitor` shows, in a form scripts and tests can read.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;

use super::pm_events::{PmError, PmEventSocket};
use crate::clock::stop_requested;

pub const WATCH_EXAMPLE: &str = "Example:\n  latlab-net mptcp-watch --netns server --count 3\n  \
     {\"time_unix_ns\":1700000000000000000,\"event\":\"created\",\"token\":123,...}";

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Watch this network namespace (a name under /var/run/netns) instead
    /// of the current one.
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this long, s [default: on SIGINT/SIGTERM].
    #[arg(long, value_name = "S", value_parser = crate::arg_values::positive_finite)]
    pub duration_s: Option<f64>,
}

fn enter_netns(name: &str) -> Result<(), String> {
    let path = format!("/var/run/netns/{name}");
    let f = std::fs::File::open(&path).map_err(|e| format!("--netns {name}: {path}: {e}"))?;
    // SAFETY: setns on a namespace file we opened; this process only reads
    // events afterwards.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "--netns {name}: setns: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Print events until `count`, `duration_s` or a stop signal.
pub fn run(args: &WatchArgs) -> Result<(), String> {
    if let Some(ns) = &args.netns {
        enter_netns(ns)?;
    }
    let mut sock = PmEventSocket::open().map_err(|e| e.to_string())?;
    let deadline = args
        .duration_s
        .map(|s| std::time::Instant::now() + Duration::from_secs_f64(s));
    let mut printed = 0u64;
    let stdout = std::io::stdout();
    while !stop_requested() && args.count.is_none_or(|c| printed < c) {
        let wait = match deadline {
            Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
                Some(left) => left.min(Duration::from_millis(200)),
                None => break,
            },
            None => Duration::from_millis(200),
        };
        let events = match sock.recv_timeout(wait) {
            Ok(events) => events,
            Err(PmError::Overrun) => {
                eprintln!("warning: {}", PmError::Overrun);
                continue;
            }
            // One bad message must not end the watch.
            Err(e @ PmError::Malformed(_)) => {
                eprintln!("warning: {e}");
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        let mut out = stdout.lock();
        for ev in events {
            if args.count.is_some_and(|c| printed >= c) {
                break;
            }
            let mut line = serde_json::Map::new();
            line.insert("time_unix_ns".into(), unix_ns().into());
            if let serde_json::Value::Object(fields) = serde_json::to_value(&ev).map_err(|e| e.to_string())? {
                line.extend(fields);
            }
            writeln!(out, "{}", serde_json::Value::Object(line)).map_err(|e| format!("stdout: {e}"))?;
            printed += 1;
        }
        out.flush().map_err(|e| format!("stdout: {e}"))?;
    }
    Ok(())
}
