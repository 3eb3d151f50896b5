//! What the MPTCP namespace tests share: the testbed check, iproute2
//! calls, namespaces deleted on drop, veth pairs, and running code inside a
//! namespace.

use std::os::fd::AsRawFd;
use std::process::Command;

pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for tool in ["ip", "tc"] {
        match Command::new(tool).arg("-V").output() {
            Ok(o) if o.status.success() => {}
            _ => return Some(format!("no iproute2 '{tool}' command")),
        }
    }
    match std::fs::read_to_string("/proc/sys/net/mptcp/enabled") {
        Ok(s) if s.trim() == "1" => None,
        _ => Some("MPTCP is not enabled (net.mptcp.enabled)".into()),
    }
}

macro_rules! skip_unless_available {
    () => {
        if let Some(why) = $crate::mptcp_util::unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

pub fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("run iproute2");
    assert!(
        out.status.success(),
        "'{}' failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

pub fn sh_out(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("run iproute2");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Namespaces `llmptcp-<pid>-<tag>-<role>`, deleted on drop.
pub struct Namespaces(pub Vec<String>);

impl Namespaces {
    /// `llmptcp-<pid>-<tag>-<role>` for each role.
    pub fn new(tag: &str, roles: &[&str]) -> Namespaces {
        let mut made = Namespaces(Vec::new());
        for role in roles {
            let name = format!("llmptcp-{}-{tag}-{role}", std::process::id());
            let _ = Command::new("ip").args(["netns", "delete", &name]).output();
            sh(&["ip", "netns", "add", &name]);
            made.0.push(name.clone());
            sh(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        }
        made
    }

    pub fn name(&self, i: usize) -> &str {
        &self.0[i]
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "delete", ns]).output();
        }
    }
}

/// A veth pair between two namespaces with a /24 address on each end.
pub fn veth(ns_a: &str, dev_a: &str, addr_a: &str, ns_b: &str, dev_b: &str, addr_b: &str) {
    sh(&[
        "ip", "-n", ns_a, "link", "add", dev_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b,
    ]);
    sh(&[
        "ip",
        "-n",
        ns_a,
        "addr",
        "add",
        &format!("{addr_a}/24"),
        "dev",
        dev_a,
    ]);
    sh(&[
        "ip",
        "-n",
        ns_b,
        "addr",
        "add",
        &format!("{addr_b}/24"),
        "dev",
        dev_b,
    ]);
    sh(&["ip", "-n", ns_a, "link", "set", dev_a, "up"]);
    sh(&["ip", "-n", ns_b, "link", "set", dev_b, "up"]);
}

/// Run `f` on a thread inside namespace `ns` (sockets it creates stay in
/// that namespace).
pub fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("namespace file");
        // SAFETY: setns on a namespace file we opened; only this thread moves.
        assert_eq!(
            unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
            0,
            "setns {path}"
        );
        f()
    })
}
