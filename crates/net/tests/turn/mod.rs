//! One test file's turn at the machine's real network at a time.
//!
//! These tests build namespaces, push thousands of sockets through the
//! machine's TCP memory, or measure rates and delays in wall time. As one
//! test binary per file, cargo ran the files one after another; gathered in
//! one binary they would run side by side, and a churn of 10,000 connections
//! would then disturb another file's rate measurement. Each test therefore
//! takes its file's turn first: tests of the same file still run together
//! (as they always did), tests of different files never overlap. A test
//! that measures a rate or a delay in wall time takes the turn alone
//! (`take_alone`): beside another emulator on a 2-core machine, its own
//! could be kept off the CPU for a few hundred ms, and the measurement
//! would be the machine's, not the path's.

use std::sync::{Condvar, Mutex};

struct Holder {
    file: Option<&'static str>,
    tests: usize,
    alone: bool,
}

static HOLDER: Mutex<Holder> = Mutex::new(Holder {
    file: None,
    tests: 0,
    alone: false,
});
static RELEASED: Condvar = Condvar::new();

/// Held while a test runs; the last test of a file to drop it hands the turn on.
pub struct Turn;

/// Wait until no other file's test is running, then run beside this file's
/// tests (`file`: the caller's `module_path!()`).
pub fn take(file: &'static str) -> Turn {
    let mut holder = HOLDER.lock().unwrap_or_else(|p| p.into_inner());
    while holder.alone || holder.file.is_some_and(|f| f != file) {
        holder = RELEASED.wait(holder).unwrap_or_else(|p| p.into_inner());
    }
    holder.file = Some(file);
    holder.tests += 1;
    Turn
}

/// Wait until no test at all is running, then run with the machine's real
/// network to this test alone.
pub fn take_alone(file: &'static str) -> Turn {
    let mut holder = HOLDER.lock().unwrap_or_else(|p| p.into_inner());
    while holder.file.is_some() {
        holder = RELEASED.wait(holder).unwrap_or_else(|p| p.into_inner());
    }
    holder.file = Some(file);
    holder.tests = 1;
    holder.alone = true;
    Turn
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut holder = HOLDER.lock().unwrap_or_else(|p| p.into_inner());
        holder.tests -= 1;
        if holder.tests == 0 {
            holder.file = None;
            holder.alone = false;
            RELEASED.notify_all();
        }
    }
}
