//! Router mode: the emulated link sits inside an existing router
//! namespace, between two of its interfaces, instead of between two
//! namespaces of the emulator's own ([`super::netns`]).
//!
//! ```text
//!  router namespace (--router-netns)
//!  client side ─ INGRESS ─▶ rule iif INGRESS → table U: default dev llemu<pid>u ─▶ fd ═ uplink line ═╗
//!                                                                                                   ║
//!          ◀─ EGRESS ─ main table ◀─ arrives on llemu<pid>d ◀─ fd ◀══════════════════════════════════╝
//!  (and the mirror image for the downlink: rule iif EGRESS → table D → llemu<pid>d, written into llemu<pid>u)
//! ```
//!
//! The kernel still does the forwarding: a policy rule per interface
//! (`ip rule add iif INGRESS lookup U`) sends everything that arrives on
//! that interface and is not for the router itself (the `local` table
//! comes first) into a TUN device; the emulator reads it, runs it through
//! the line, and writes it into the *other* direction's TUN device, where
//! it arrives as a received packet with no rule of ours, so the main table
//! routes it on. The packet's TTL drops twice (once per forwarding).
//! Packets the router sends itself (ICMP errors, its own sockets) take the
//! main table and are not delayed. IPv4 only: the TUN devices have IPv6
//! turned off and there are no IPv6 rules.
//!
//! Reverse-path filtering: a packet written back arrives on a TUN device,
//! not on the interface its source is routed through, so the TUN devices
//! get `rp_filter` 0, and a namespace whose `conf/all/rp_filter` is strict
//! (1) is refused (the kernel applies the larger of `all` and the device's
//! value). Forwarding must already be on (`net.ipv4.ip_forward`): turning
//! a namespace into a router is the caller's decision.
//!
//! Clean-up: the rules and the two tables' routes are removed on every
//! exit the process sees (a guard's Drop; SIGINT/SIGTERM end the loop).
//! TUN devices vanish with the descriptor, and their routes with them;
//! the rules survive a SIGKILL, so their table numbers carry the owner's
//! pid ([`table_of`]) and a later run in the same namespace removes the
//! rules of an emulator that no longer runs ([`remove_stale_rules`]).

use std::os::fd::AsRawFd;

use super::netns::{alive_emulator, ip};
use super::tun::Tun;

/// Routing tables of router mode: `TABLE_BASE + 2·pid + direction`
/// (pids are below 2^22 on Linux, so the range ends below 2^32 and clear
/// of the kernel's named tables 253-255 and of small user numbers).
pub const TABLE_BASE: u32 = 0x4c00_0000;
/// Last table number of the range (exclusive).
const TABLE_END: u32 = TABLE_BASE + (1 << 23);
/// Preference of the rules: before the main table's (32766) and any
/// ordinary rule a router namespace is likely to hold.
pub const RULE_PREF: u32 = 90;

/// Which way a packet crosses the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Arrived on INGRESS (the client side): the uplink.
    Up = 0,
    /// Arrived on EGRESS (the server side): the downlink.
    Down = 1,
}

/// The table that sends `way`'s packets of emulator `pid` into its TUN.
pub fn table_of(pid: u32, way: Way) -> u32 {
    TABLE_BASE + 2 * pid + way as u32
}

/// The emulator pid a table number belongs to, if it is one of ours.
pub fn owner_of_table(table: u32) -> Option<u32> {
    (TABLE_BASE..TABLE_END)
        .contains(&table)
        .then(|| (table - TABLE_BASE) / 2)
}

/// `ip [-n NS] ARGS...`.
fn ip_in(ns: Option<&str>, args: &[&str]) -> Result<String, String> {
    let mut all: Vec<&str> = Vec::with_capacity(args.len() + 2);
    if let Some(ns) = ns {
        all.extend(["-n", ns]);
    }
    all.extend_from_slice(args);
    ip(&all)
}

/// One line of `ip -4 rule show`: its preference, `iif` and table.
#[derive(Debug, PartialEq, Eq)]
pub struct RuleLine {
    pub pref: u32,
    pub iif: Option<String>,
    pub table: u32,
}

/// Parse `ip -4 rule show` lines of the form
/// `90:\tfrom all iif veth0 lookup 1275068416` (other lines: None; a
/// table shown by name is not ours).
pub fn parse_rule(line: &str) -> Option<RuleLine> {
    let (pref, rest) = line.split_once(':')?;
    let pref = pref.trim().parse().ok()?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .copied()
    };
    let table = after("lookup").or_else(|| after("table"))?.parse().ok()?;
    Some(RuleLine {
        pref,
        iif: after("iif").map(str::to_string),
        table,
    })
}

/// Remove, in namespace `ns`, the rules (and tables) of router-mode
/// emulators that no longer run; returns what was removed, one
/// description each. A rule another emulator starting at the same time
/// removed first is not an error.
pub fn remove_stale_rules(ns: Option<&str>) -> Result<Vec<String>, String> {
    let list = ip_in(ns, &["-4", "rule", "show"])?;
    let mut removed = Vec::new();
    for rule in list.lines().filter_map(parse_rule) {
        let Some(pid) = owner_of_table(rule.table) else {
            continue;
        };
        if alive_emulator(pid) {
            continue;
        }
        let pref = rule.pref.to_string();
        let table = rule.table.to_string();
        if let Err(e) = ip_in(ns, &["-4", "rule", "del", "pref", &pref, "lookup", &table]) {
            let still_there = ip_in(ns, &["-4", "rule", "show"])?
                .lines()
                .filter_map(parse_rule)
                .any(|r| r.pref == rule.pref && r.table == rule.table);
            if still_there {
                return Err(e);
            }
            continue;
        }
        // The routes went with the killed emulator's TUN devices; flush in
        // case a device of that name was made again since.
        let _ = ip_in(ns, &["-4", "route", "flush", "table", &table]);
        removed.push(format!(
            "rule {pref} iif {} lookup {table} (emulator {pid})",
            rule.iif.as_deref().unwrap_or("?")
        ));
    }
    Ok(removed)
}

/// Write `value` to `/proc/sys/...` `knob` as seen from namespace `ns`
/// (the current one for None). /proc/sys/net belongs to the namespace of
/// the thread that opens it, hence the thread.
fn sysctl(ns: Option<&str>, knob: &str, value: Option<&str>) -> Result<String, String> {
    let ns = ns.map(str::to_string);
    let knob = knob.to_string();
    let value = value.map(str::to_string);
    std::thread::spawn(move || -> Result<String, String> {
        if let Some(ns) = &ns {
            let path = format!("/var/run/netns/{ns}");
            let f = std::fs::File::open(&path).map_err(|e| format!("--router-netns {ns}: {path}: {e}"))?;
            // SAFETY: setns on a namespace file we opened; only this
            // short-lived thread changes namespace.
            if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
            }
        }
        let path = format!("/proc/sys/{knob}");
        match value {
            Some(v) => std::fs::write(&path, &v)
                .map(|_| v)
                .map_err(|e| format!("{path}: {e}")),
            None => std::fs::read_to_string(&path)
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("{path}: {e}")),
        }
    })
    .join()
    .map_err(|_| "the router set-up thread panicked".to_string())?
}

/// The interfaces and devices of a router-mode emulator. Dropping it
/// removes its rules and routes (the TUN devices go when their
/// descriptors close).
pub struct RouterPath {
    pub ns: Option<String>,
    pub ingress: String,
    pub egress: String,
    pub up_dev: String,
    pub down_dev: String,
    /// (pref, table) of every rule added.
    rules: Vec<(u32, u32)>,
    tables: Vec<u32>,
}

impl RouterPath {
    /// Move `up` and `down` into `ns` (if given), and send what arrives on
    /// `ingress` into `up`, what arrives on `egress` into `down`. On
    /// error, whatever was made is removed.
    pub fn create(
        pid: u32,
        ns: Option<&str>,
        ingress: &str,
        egress: &str,
        up: &Tun,
        down: &Tun,
        mtu: u32,
    ) -> Result<RouterPath, String> {
        check_namespace(ns, ingress, egress)?;
        let mut path = RouterPath {
            ns: ns.map(str::to_string),
            ingress: ingress.to_string(),
            egress: egress.to_string(),
            up_dev: up.name().to_string(),
            down_dev: down.name().to_string(),
            rules: Vec::new(),
            tables: Vec::new(),
        };
        let mtu = mtu.to_string();
        for (dev, iif, way) in [
            (path.up_dev.clone(), ingress, Way::Up),
            (path.down_dev.clone(), egress, Way::Down),
        ] {
            path.route_into(ns, pid, &dev, iif, way, &mtu)?;
        }
        Ok(path)
    }

    /// Move TUN device `dev` into `ns` (if given), bring it up, and route
    /// what arrives on interface `iif` into it through a table of its own.
    fn route_into(
        &mut self,
        ns: Option<&str>,
        pid: u32,
        dev: &str,
        iif: &str,
        way: Way,
        mtu: &str,
    ) -> Result<(), String> {
        if let Some(ns) = ns {
            ip(&["link", "set", "dev", dev, "netns", ns])?;
        }
        // The device's IPv4/IPv6 settings are made when it enters the
        // namespace, so they are set after the move.
        match sysctl(ns, &format!("net/ipv6/conf/{dev}/disable_ipv6"), Some("1")) {
            Err(e) if !e.contains("No such file") => return Err(e),
            _ => {}
        }
        sysctl(ns, &format!("net/ipv4/conf/{dev}/rp_filter"), Some("0"))?;
        sysctl(ns, &format!("net/ipv4/conf/{dev}/forwarding"), Some("1"))?;
        // A long device queue, as for the host-mode devices.
        ip_in(
            ns,
            &["link", "set", "dev", dev, "mtu", mtu, "txqueuelen", "10000", "up"],
        )?;
        let table = table_of(pid, way);
        let t = table.to_string();
        self.tables.push(table);
        ip_in(ns, &["-4", "route", "add", "default", "dev", dev, "table", &t])?;
        let pref = RULE_PREF.to_string();
        ip_in(
            ns,
            &["-4", "rule", "add", "pref", &pref, "iif", iif, "lookup", &t],
        )?;
        self.rules.push((RULE_PREF, table));
        Ok(())
    }
}

/// Router mode needs two distinct interfaces that exist in `ns`, and a
/// namespace that forwards without strict reverse-path filtering.
fn check_namespace(ns: Option<&str>, ingress: &str, egress: &str) -> Result<(), String> {
    if ingress == egress {
        return Err(format!(
            "--ingress and --egress are the same interface ({ingress:?}); the link needs two sides"
        ));
    }
    for (flag, dev) in [("--ingress", ingress), ("--egress", egress)] {
        ip_in(ns, &["link", "show", "dev", dev]).map_err(|e| {
            format!(
                "{flag} {dev:?}: no such interface in {}: {e}",
                ns.unwrap_or("this namespace")
            )
        })?;
    }
    let where_ = ns.unwrap_or("this namespace");
    if sysctl(ns, "net/ipv4/ip_forward", None)? != "1" {
        return Err(format!(
            "net.ipv4.ip_forward is 0 in {where_}: router mode needs a namespace that forwards"
        ));
    }
    if sysctl(ns, "net/ipv4/conf/all/rp_filter", None)? == "1" {
        return Err(format!(
            "net.ipv4.conf.all.rp_filter is 1 (strict) in {where_}: packets the emulator writes back \
             arrive on its TUN device, not on the interface their source is routed through; set it to 0 or 2"
        ));
    }
    Ok(())
}

impl Drop for RouterPath {
    fn drop(&mut self) {
        let ns = self.ns.as_deref();
        for (pref, table) in self.rules.drain(..) {
            let (pref, table) = (pref.to_string(), table.to_string());
            if let Err(e) = ip_in(ns, &["-4", "rule", "del", "pref", &pref, "lookup", &table]) {
                eprintln!("warning: {e}");
            }
        }
        for table in self.tables.drain(..) {
            // Routes through a device still open; an empty table is fine.
            let _ = ip_in(ns, &["-4", "route", "flush", "table", &table.to_string()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_carry_their_owner() {
        for pid in [1, 77, 4_194_303] {
            for way in [Way::Up, Way::Down] {
                assert_eq!(owner_of_table(table_of(pid, way)), Some(pid));
            }
        }
        assert_ne!(table_of(5, Way::Up), table_of(5, Way::Down));
        assert_eq!(owner_of_table(254), None);
        assert_eq!(owner_of_table(TABLE_END), None);
    }

    #[test]
    fn rule_lines_are_parsed() {
        assert_eq!(
            parse_rule("90:\tfrom all iif veth0 lookup 1275068416"),
            Some(RuleLine {
                pref: 90,
                iif: Some("veth0".into()),
                table: 1_275_068_416
            })
        );
        assert_eq!(
            parse_rule("32766:\tfrom all lookup main"),
            None,
            "named tables are not ours"
        );
        assert_eq!(parse_rule("0:\tfrom all lookup local"), None);
        assert_eq!(parse_rule("garbage"), None);
    }
}
