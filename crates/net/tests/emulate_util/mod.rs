//! What the emulator's namespace tests share: the testbed check (root, a TUN
//! device, iproute2) and a scratch directory per test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why these tests cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("no iproute2 'ip' command".into()),
    }
}

/// A fresh, empty directory under the system's temp dir, named for the test
/// binary (`kind`), this process and the test.
pub fn scratch_dir(kind: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latlab-{kind}-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
