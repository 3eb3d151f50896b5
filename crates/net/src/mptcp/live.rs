//! The TCP sockets the kernel has now, as 4-tuples: what a lost
//! SUB_CLOSED or CLOSED event is checked against ([`super::steer::Steering::reconcile`]).
//!
//! MPTCP subflows are ordinary TCP sockets in the kernel's hash tables, so
//! they are listed in /proc/net/tcp and /proc/net/tcp6 of their network
//! namespace (the reading thread's: /proc/thread-self/net) like any other
//! connection. The format is the kernel's (net/ipv4/tcp_ipv4.c
//! get_tcp4_sock, net/ipv6/tcp_ipv6.c get_tcp6_sock): per line `sl
//! local_address rem_address st ...`, addresses as the raw 32-bit words of
//! the address printed in hex in host byte order, ports in hex, the state
//! as a hex TCP_* number. Reading it costs a few milliseconds per ten
//! thousand sockets, which is why it is done only to resynchronise, never
//! per event.

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::FourTuple;

/// TCP_TIME_WAIT, TCP_CLOSE and TCP_LISTEN (include/net/tcp_states.h): no
/// subflow that can still carry data.
const DEAD_STATES: [u8; 3] = [0x06, 0x07, 0x0a];

/// A 4-tuple with IPv4-mapped IPv6 addresses turned into IPv4 ones, so a
/// subflow compares equal however it was reported.
pub fn canonical(t: &FourTuple) -> FourTuple {
    let c = |a: &SocketAddr| SocketAddr::new(a.ip().to_canonical(), a.port());
    FourTuple {
        local: c(&t.local),
        remote: c(&t.remote),
    }
}

fn parse_addr(field: &str) -> Option<SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(addr, 16).ok()?.to_ne_bytes())),
        32 => {
            let mut octets = [0u8; 16];
            for (i, chunk) in octets.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(&addr[i * 8..i * 8 + 8], 16).ok()?;
                chunk.copy_from_slice(&word.to_ne_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(octets))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip.to_canonical(), port))
}

/// The live connections (not listening, closed or in TIME_WAIT) in the
/// text of /proc/net/tcp or /proc/net/tcp6, canonical; lines that do not
/// parse (the header) are skipped.
pub fn parse_proc_net_tcp(text: &str, out: &mut HashSet<FourTuple>) {
    for line in text.lines() {
        let mut fields = line.split_whitespace().skip(1);
        let (Some(local), Some(remote), Some(state)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let (Some(local), Some(remote), Ok(state)) = (
            parse_addr(local),
            parse_addr(remote),
            u8::from_str_radix(state, 16),
        ) else {
            continue;
        };
        if !DEAD_STATES.contains(&state) {
            out.insert(FourTuple { local, remote });
        }
    }
}

/// The live TCP connections (MPTCP subflows among them) of the calling
/// thread's network namespace, canonical ([`canonical`]).
pub fn live_tcp_tuples() -> io::Result<HashSet<FourTuple>> {
    let mut out = HashSet::new();
    for (path, required) in [
        ("/proc/thread-self/net/tcp", true),
        ("/proc/thread-self/net/tcp6", false),
    ] {
        match std::fs::read_to_string(path) {
            Ok(text) => parse_proc_net_tcp(&text, &mut out),
            // No IPv6 in this kernel: nothing to list there.
            Err(e) if !required && e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("{path}: {e}"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_endian = "little")]
    fn parses_both_families_and_skips_dead_states() {
        // Written as the kernel writes them on a little-endian machine:
        // 10.235.2.2:8080 <-> 10.235.2.1:40000 established, a listener, a
        // TIME_WAIT, and an IPv6 ::ffff:10.0.0.1 connection.
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                  \x20  0: 0202EB0A:1F90 0102EB0A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0 10 0 0 10 -1\n\
                  \x20  1: 0200000A:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 10 0 0 10 -1\n\
                  \x20  2: 0202EB0A:1F90 0102EB0A:9C41 06 00000000:00000000 03:00000F9A 00000000     0        0 0 3 0\n";
        let v6 = "  sl  local_address                         remote_address                        st\n\
                  \x20  0: 0000000000000000FFFF00000100000A:0050 000000FD000000000000000001000000:A000 01 0\n";
        let mut live = HashSet::new();
        parse_proc_net_tcp(v4, &mut live);
        parse_proc_net_tcp(v6, &mut live);
        let t = |l: &str, r: &str| FourTuple {
            local: l.parse().unwrap(),
            remote: r.parse().unwrap(),
        };
        let expected = HashSet::from([
            t("10.235.2.2:8080", "10.235.2.1:40000"),
            t("10.0.0.1:80", "[fd00::1]:40960"),
        ]);
        assert_eq!(live, expected);
        // A v4-mapped report of the first subflow is the same subflow.
        let mapped = t("[::ffff:10.235.2.2]:8080", "[::ffff:10.235.2.1]:40000");
        assert!(live.contains(&canonical(&mapped)));
    }

    #[test]
    fn reads_this_namespace() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let live = live_tcp_tuples().unwrap();
        let tuple = FourTuple {
            local: c.local_addr().unwrap(),
            remote: c.peer_addr().unwrap(),
        };
        assert!(live.contains(&tuple), "{tuple} not in {} sockets", live.len());
        // The listener itself is not a connection.
        assert!(!live
            .iter()
            .any(|t| t.local == l.local_addr().unwrap() && t.remote.port() == 0));
    }
}
