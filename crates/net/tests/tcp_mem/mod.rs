//! Is the machine's TCP memory fit for a rate measurement? (The Python side's
//! twin is python/latlab/real/tcpmem.py.)
//!
//! Every TCP socket in every namespace counts against one machine-wide budget,
//! net.ipv4.tcp_mem (low, pressure, high; pages). Past the pressure threshold
//! Linux throttles every TCP connection, without any error. Some kernels leak
//! this count after heavy MPTCP or splice traffic (a WARNING in
//! inet_sock_destruct), so it stays high with every socket closed. A test that
//! measures a TCP rate checks first and skips, saying why, rather than report
//! the machine's state as the code's fault.

/// TCP memory in use and the pressure threshold, pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpMem {
    pub in_use_pages: u64,
    pub pressure_pages: u64,
}

/// Parse /proc/net/sockstat's `TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 3`
/// and /proc/sys/net/ipv4/tcp_mem's three numbers.
pub fn parse(sockstat: &str, tcp_mem: &str) -> Option<TcpMem> {
    let line = sockstat.lines().find(|l| l.starts_with("TCP:"))?;
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let in_use_pages = words
        .chunks(2)
        .find(|kv| kv[0] == "mem")
        .and_then(|kv| kv.get(1)?.parse().ok())?;
    let limits: Vec<u64> = tcp_mem
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [_, pressure_pages, _] = limits[..] else {
        return None;
    };
    Some(TcpMem {
        in_use_pages,
        pressure_pages,
    })
}

/// This machine's state; None where /proc does not tell.
pub fn read() -> Option<TcpMem> {
    parse(
        &std::fs::read_to_string("/proc/net/sockstat").ok()?,
        &std::fs::read_to_string("/proc/sys/net/ipv4/tcp_mem").ok()?,
    )
}

impl TcpMem {
    /// Why a rate measured now would be wrong: at or above 80 % of the
    /// threshold (the measurement's own sockets add a few thousand pages).
    pub fn unfit_reason(self) -> Option<String> {
        (self.in_use_pages * 5 >= self.pressure_pages * 4).then(|| {
            format!(
                "TCP memory holds {} pages, at or near net.ipv4.tcp_mem's pressure threshold {} \
                 where Linux throttles every TCP connection (with no TCP sockets open: the kernel's \
                 leaked accounting, see inet_sock_destruct in the kernel log; a reboot clears it)",
                self.in_use_pages, self.pressure_pages
            )
        })
    }
}

/// Why this machine's TCP memory would spoil a rate measurement now, if it would.
pub fn unfit_reason() -> Option<String> {
    read().and_then(TcpMem::unfit_reason)
}

/// Return from the test, saying why, when TCP memory would spoil its rates.
macro_rules! skip_if_tcp_mem_unfit {
    () => {
        if let Some(why) = $crate::tcp_mem::unfit_reason() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP_MEM: &str = "287898\t383867\t575796\n";

    fn sockstat(mem: u64) -> String {
        format!("sockets: used 40\nTCP: inuse 3 orphan 1 tw 0 alloc 5 mem {mem}\nUDP: inuse 0 mem 0\n")
    }

    #[test]
    fn the_proc_files_are_parsed() {
        let m = parse(&sockstat(205), TCP_MEM).unwrap();
        assert_eq!(
            m,
            TcpMem {
                in_use_pages: 205,
                pressure_pages: 383_867
            }
        );
        assert_eq!(m.unfit_reason(), None);
    }

    #[test]
    fn near_or_above_the_threshold_is_unfit() {
        assert_eq!(parse(&sockstat(307_093), TCP_MEM).unwrap().unfit_reason(), None);
        let why = parse(&sockstat(307_094), TCP_MEM)
            .unwrap()
            .unfit_reason()
            .unwrap();
        assert!(why.contains("307094 pages") && why.contains("383867"), "{why}");
        assert!(parse(&sockstat(400_000), TCP_MEM)
            .unwrap()
            .unfit_reason()
            .is_some());
    }

    #[test]
    fn malformed_files_are_unknown() {
        assert_eq!(parse("UDP: inuse 0 mem 0\n", TCP_MEM), None);
        assert_eq!(parse("TCP: inuse 3 orphan 1\n", TCP_MEM), None);
        assert_eq!(parse("TCP: inuse 3 mem\n", TCP_MEM), None);
        assert_eq!(parse(&sockstat(1), "1 2\n"), None);
        assert_eq!(parse(&sockstat(1), "1 x 3\n"), None);
    }
}
