//! ECN for the kernel's flows. Linux has no per-socket switch: a
//! connection requests ECN in its SYN, and a listener accepts it, when its
//! network namespace's `net.ipv4.tcp_ecn` says so (1: request and accept;
//! 2, the default: accept only; 0: neither; Documentation/networking/
//! ip-sysctl.rst). The flow engine sets it in the client and the server
//! namespace before any socket exists, so that `tcp.ecn = true` means ECT
//! data, ECE and CWR as in the simulator, and ECN off means neither end uses
//! it. [`NamespaceEcn`] puts the previous values back when it is dropped:
//! the namespaces may be the user's own.

use std::fs::File;

/// The sysctl's file; it shows the namespace of the thread that opens it.
const TCP_ECN: &str = "/proc/sys/net/ipv4/tcp_ecn";

/// `net.ipv4.tcp_ecn` for a scenario's `tcp.ecn`.
pub fn sysctl_value(ecn: bool) -> u8 {
    if ecn {
        1
    } else {
        0
    }
}

/// The value set in each namespace, and what was there before.
pub struct NamespaceEcn<'a> {
    pub value: u8,
    /// (namespace, previous value), in the order they were set.
    previous: Vec<(&'a File, String)>,
}

impl<'a> NamespaceEcn<'a> {
    /// Set `net.ipv4.tcp_ecn` in every namespace of `namespaces`.
    pub fn set(namespaces: &[&'a File], ecn: bool) -> Result<NamespaceEcn<'a>, String> {
        let value = sysctl_value(ecn);
        let mut set = NamespaceEcn {
            value,
            previous: Vec::new(),
        };
        for &ns in namespaces {
            let before = swap_in(ns, &value.to_string())?;
            set.previous.push((ns, before));
        }
        Ok(set)
    }
}

impl Drop for NamespaceEcn<'_> {
    fn drop(&mut self) {
        // Last set first, so a namespace given twice ends with its own value.
        for (ns, before) in self.previous.drain(..).rev() {
            let _ = swap_in(ns, &before);
        }
    }
}

/// Write `value` to the sysctl inside `ns` (on a thread of its own: setns
/// changes only the calling thread); the value it had.
fn swap_in(ns: &File, value: &str) -> Result<String, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            super::enter(ns)?;
            let before = std::fs::read_to_string(TCP_ECN).map_err(|e| format!("{TCP_ECN}: {e}"))?;
            std::fs::write(TCP_ECN, value).map_err(|e| format!("write {value} to {TCP_ECN}: {e}"))?;
            Ok(before.trim().to_string())
        })
        .join()
        .unwrap_or_else(|_| Err(format!("setting {TCP_ECN}: the thread panicked")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A network namespace of this test's own, deleted on drop.
    struct TestNs(String);

    impl TestNs {
        fn add(tag: &str) -> Option<TestNs> {
            let name = format!("latlab-ecn-test-{}-{tag}", std::process::id());
            let ok = Command::new("ip")
                .args(["netns", "add", &name])
                .status()
                .is_ok_and(|s| s.success());
            ok.then_some(TestNs(name))
        }

        fn file(&self) -> File {
            super::super::open_ns(&self.0).unwrap()
        }
    }

    impl Drop for TestNs {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }

    fn value_in(ns: &File) -> String {
        let now = swap_in(ns, "2").unwrap();
        swap_in(ns, &now).unwrap();
        now
    }

    /// Needs root and iproute2; says why and passes without them.
    #[test]
    fn the_switch_is_set_in_each_namespace_and_put_back() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: not root (network namespaces)");
            return;
        }
        let (Some(a), Some(b)) = (TestNs::add("a"), TestNs::add("b")) else {
            eprintln!("skipped: 'ip netns add' failed (no iproute2?)");
            return;
        };
        let host = std::fs::read_to_string(TCP_ECN).unwrap();
        let (fa, fb) = (a.file(), b.file());
        // A new namespace starts at the kernel's default, 2 (accept, do not request).
        assert_eq!((value_in(&fa), value_in(&fb)), ("2".into(), "2".into()));
        {
            let on = NamespaceEcn::set(&[&fa, &fb], true).unwrap();
            assert_eq!(on.value, 1);
            assert_eq!((value_in(&fa), value_in(&fb)), ("1".into(), "1".into()));
            assert_eq!(
                std::fs::read_to_string(TCP_ECN).unwrap(),
                host,
                "the host's own is untouched"
            );
        }
        assert_eq!((value_in(&fa), value_in(&fb)), ("2".into(), "2".into()));
        // One namespace given twice (client and server alike) ends with its own value.
        {
            let off = NamespaceEcn::set(&[&fa, &fa], false).unwrap();
            assert_eq!((off.value, value_in(&fa)), (0, "0".into()));
        }
        assert_eq!(value_in(&fa), "2");
    }
}
