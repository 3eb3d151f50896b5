//! The two end hosts: a client and a server network namespace, each with
//! one TUN device whose other end is this process. There is no kernel
//! forwarding between them: every packet the client sends to the server
//! leaves the client's TUN, goes through the emulator's uplink, and is
//! written to the server's TUN (and the reverse for the downlink). The
//! emulator itself is the router namespace's forwarding plane.
//!
//! Names carry the emulator's pid (`llemu-<pid>-client`, device
//! `llemu<pid>c`), so that a later run can tell a namespace left by a
//! killed emulator (its pid is gone, or no longer a latlab-net process)
//! from one a live emulator uses, and remove it. TUN devices are not
//! persistent: they vanish with the process that opened them.

use std::os::fd::AsRawFd;
use std::process::Command;

use super::tun::Tun;

/// Prefix of every namespace the emulator creates.
pub const NS_PREFIX: &str = "llemu-";

/// The client's and the server's addresses (a /24 each, one route each way
/// through the device).
pub const CLIENT_ADDR: &str = "10.77.0.1";
pub const SERVER_ADDR: &str = "10.77.1.1";
const CLIENT_NET: &str = "10.77.0.0/24";
const SERVER_NET: &str = "10.77.1.0/24";

/// Run `ip ARGS`, returning its stdout or a message with its stderr.
pub fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run 'ip' (iproute2): {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "'ip {}' failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The pid in an emulator namespace's name (`llemu-<pid>-<role>`).
pub fn owner_pid(ns: &str) -> Option<u32> {
    let rest = ns.strip_prefix(NS_PREFIX)?;
    let (pid, role) = rest.split_once('-')?;
    if role != "client" && role != "server" {
        return None;
    }
    pid.parse().ok()
}

/// Whether `pid` is a live latlab-net process other than this one.
pub fn alive_emulator(pid: u32) -> bool {
    if pid == std::process::id() {
        return false; // a namespace of ours before we made any: stale (pid reuse)
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|comm| comm.trim() == "latlab-net")
        .unwrap_or(false)
}

/// Delete emulator namespaces whose owner is gone; returns their names.
/// Another emulator starting at the same time may delete one first: a
/// namespace gone by the time this one tries is not an error.
pub fn remove_stale() -> Result<Vec<String>, String> {
    remove_stale_of(&ip(&["netns", "list"])?)
}

/// `remove_stale` over an `ip netns list` output.
fn remove_stale_of(list: &str) -> Result<Vec<String>, String> {
    let mut removed = Vec::new();
    for line in list.lines() {
        // "name" or "name (id: N)".
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(pid) = owner_pid(name) {
            if !alive_emulator(pid) {
                match ip(&["netns", "delete", name]) {
                    Ok(_) => removed.push(name.to_string()),
                    Err(_) if !exists(name) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(removed)
}

/// Whether namespace `ns` exists (its file under /run/netns, where
/// `ip netns` keeps them).
fn exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Turn IPv6 off for devices that enter namespace `ns` from now on. The
/// path is IPv4 (10.77.0.0/24 ↔ 10.77.1.0/24); without this the kernel
/// sends IPv6 router solicitations and MLD reports through the emulated
/// links at odd times, which would muddle a run's counters. /proc/sys/net
/// belongs to the namespace of the thread that opens it, hence the thread.
fn ipv4_only(ns: &str) -> Result<(), String> {
    let path = format!("/var/run/netns/{ns}");
    let ns = ns.to_string();
    std::thread::spawn(move || -> Result<(), String> {
        let f = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        // SAFETY: setns on a namespace file we opened; only this short-lived
        // thread changes namespace.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
        }
        let knob = "/proc/sys/net/ipv6/conf/default/disable_ipv6";
        match std::fs::write(knob, "1") {
            // A kernel without IPv6 has nothing to turn off.
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("{knob} in {ns}: {e}")),
            _ => Ok(()),
        }
    })
    .join()
    .map_err(|_| "the namespace set-up thread panicked".to_string())?
}

/// The client and server namespaces with their TUN devices configured.
/// Dropping it deletes both namespaces.
pub struct Hosts {
    pub client_ns: String,
    pub server_ns: String,
    pub client_dev: String,
    pub server_dev: String,
    created: Vec<String>,
}

impl Hosts {
    /// Create the namespaces, move `client`'s and `server`'s devices into
    /// them and configure addresses, MTU and routes. On error, whatever was
    /// made is removed.
    pub fn create(pid: u32, client: &Tun, server: &Tun, mtu: u32) -> Result<Hosts, String> {
        let mut hosts = Hosts {
            client_ns: format!("{NS_PREFIX}{pid}-client"),
            server_ns: format!("{NS_PREFIX}{pid}-server"),
            client_dev: client.name().to_string(),
            server_dev: server.name().to_string(),
            created: Vec::new(),
        };
        let mtu = mtu.to_string();
        for (ns, dev, addr, peer_net) in [
            (
                hosts.client_ns.clone(),
                hosts.client_dev.clone(),
                CLIENT_ADDR,
                SERVER_NET,
            ),
            (
                hosts.server_ns.clone(),
                hosts.server_dev.clone(),
                SERVER_ADDR,
                CLIENT_NET,
            ),
        ] {
            ip(&["netns", "add", &ns])?;
            hosts.created.push(ns.clone());
            ipv4_only(&ns)?;
            ip(&["link", "set", "dev", &dev, "netns", &ns])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", &dev])?;
            // A long device queue: the kernel holds packets there while the
            // emulator is between reads; drops there would be invisible.
            ip(&[
                "-n",
                &ns,
                "link",
                "set",
                "dev",
                &dev,
                "mtu",
                &mtu,
                "txqueuelen",
                "10000",
                "up",
            ])?;
            ip(&["-n", &ns, "route", "add", peer_net, "dev", &dev])?;
        }
        Ok(hosts)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.created.drain(..) {
            if let Err(e) = ip(&["netns", "delete", &ns]) {
                eprintln!("warning: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pids_are_read_from_names() {
        assert_eq!(owner_pid("llemu-1234-client"), Some(1234));
        assert_eq!(owner_pid("llemu-77-server"), Some(77));
        assert_eq!(owner_pid("llemu-77-router"), None);
        assert_eq!(owner_pid("llemu-x-client"), None);
        assert_eq!(owner_pid("other-1-client"), None);
        assert!(!alive_emulator(std::process::id()));
    }

    /// A stale namespace another emulator deleted between the listing and
    /// the delete: not an error, and not reported as removed by this one.
    /// (The CI run that found it: two emulators starting after a SIGKILL,
    /// the second failed with "Cannot remove namespace file".)
    #[test]
    fn a_stale_namespace_already_gone_is_not_an_error() {
        // Pid 0 is never a process; the name matches no namespace file.
        let gone = format!("{NS_PREFIX}0-client");
        assert!(!exists(&gone));
        assert_eq!(remove_stale_of(&format!("{gone} (id: 7)\nother\n")), Ok(vec![]));
    }
}
