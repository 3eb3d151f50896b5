//! `latlab-net proxy` under pressure, over loopback: a client that does not
//! read and a server that does not read (the proxy holds at most its pipes:
//! back-pressure reaches the sender, RSS stays flat), and SIGTERM (new
//! connections refused, in-flight transfers finish within the grace
//! period, stragglers closed at its end).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::proxy_util::*;

/// Write without blocking until the kernel refuses more for `quiet`; the bytes accepted.
fn fill(s: &mut TcpStream, quiet: Duration) -> u64 {
    s.set_nonblocking(true).unwrap();
    let chunk = vec![0x5au8; 1 << 16];
    let mut total = 0u64;
    let mut last = Instant::now();
    while last.elapsed() < quiet {
        match s.write(&chunk) {
            Ok(n) => {
                total += n as u64;
                last = Instant::now();
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("{e}"),
        }
    }
    s.set_nonblocking(false).unwrap();
    total
}

#[test]
fn a_client_or_server_that_does_not_read_is_held_back() {
    let _turn = crate::turn::take(module_path!());
    // Slow client: the server writes as fast as it can while the client
    // reads nothing; the server must be stopped by flow control.
    let written = Arc::new(AtomicU64::new(0));
    let w = Arc::clone(&written);
    let (server_addr, _) = server(move |mut s: TcpStream| {
        let total = fill(&mut s, Duration::from_millis(500));
        w.store(total, Ordering::SeqCst);
        let _ = s.shutdown(Shutdown::Write);
    });
    let proxy = Proxy::start(&["--to", &server_addr.to_string(), "--buffer-bytes", "65536"]);
    let rss0 = proxy.rss_kib();
    let mut c = TcpStream::connect(proxy.addr).unwrap();
    let t0 = Instant::now();
    while written.load(Ordering::SeqCst) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(10), "the server never stalled");
        thread::sleep(Duration::from_millis(20));
    }
    let stalled_at = written.load(Ordering::SeqCst);
    let rss_stalled = proxy.rss_kib();
    eprintln!("slow client: server stalled after {stalled_at} bytes; proxy RSS {rss0} → {rss_stalled} KiB");
    // What can be in flight: the sockets' buffers (autotuned, a few MB
    // each) and one 64 KiB pipe; without back-pressure it would be unbounded.
    assert!(stalled_at < 64 << 20, "{stalled_at}");
    assert!(rss_stalled < rss0 + 1024, "RSS {rss0} → {rss_stalled} KiB");
    let (got, err) = read_all(&mut c);
    assert!(err.is_none());
    assert_eq!(got.len() as u64, stalled_at);

    // Slow server: it never reads; the client's writes stall.
    let (server_addr, _) = server(|s: TcpStream| {
        thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    let proxy = Proxy::start(&["--to", &server_addr.to_string()]);
    let rss0 = proxy.rss_kib();
    let mut c = TcpStream::connect(proxy.addr).unwrap();
    let accepted = fill(&mut c, Duration::from_millis(300));
    let rss1 = proxy.rss_kib();
    eprintln!("slow server: client stalled after {accepted} bytes; proxy RSS {rss0} → {rss1} KiB");
    assert!(accepted < 64 << 20, "{accepted}");
    assert!(rss1 < rss0 + 1024, "RSS {rss0} → {rss1} KiB");
}

#[test]
fn sigterm_stops_accepting_and_drains_transfers_in_flight() {
    let _turn = crate::turn::take(module_path!());
    // The server sends 8 MB slowly (1 MB every 50 ms) to each client.
    let (server_addr, _) = server(|mut s: TcpStream| {
        let block = pattern(1 << 20);
        for _ in 0..8 {
            if s.write_all(&block).is_err() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
    });
    let dir = scratch("drain");
    let log = dir.join("events.jsonl");
    let mut proxy = Proxy::start(&[
        "--to",
        &server_addr.to_string(),
        "--grace-s",
        "5",
        "--events",
        log.to_str().unwrap(),
    ]);
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(proxy.addr).unwrap();
            thread::spawn(move || read_all(&mut c))
        })
        .collect();
    thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    proxy.terminate();
    thread::sleep(Duration::from_millis(100));
    // Not accepting any more.
    assert!(
        TcpStream::connect(proxy.addr).is_err(),
        "still accepting after SIGTERM"
    );
    for r in readers {
        let (got, err) = r.join().unwrap();
        assert!(
            err.is_none() && got.len() == 8 << 20,
            "{} bytes, {err:?}",
            got.len()
        );
    }
    assert_eq!(proxy.wait_exit(Duration::from_secs(5)), Some(0));
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "exit {took:?} after SIGTERM: it waited for the grace period"
    );
    let ev = events(&log);
    assert_eq!(ev.len(), 4);
    assert!(ev
        .iter()
        .all(|e| e["close"] == "done" && e["bytes_s2c"] == 8 << 20));

    // A connection that never finishes is closed at the end of the grace period.
    let server = echo_server();
    let mut proxy = Proxy::start(&["--to", &server.to_string(), "--grace-s", "0.3"]);
    let mut idle = TcpStream::connect(proxy.addr).unwrap();
    idle.write_all(b"x").unwrap();
    let mut one = [0u8; 1];
    idle.read_exact(&mut one).unwrap();
    let t0 = Instant::now();
    proxy.terminate();
    assert_eq!(proxy.wait_exit(Duration::from_secs(3)), Some(0));
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(2),
        "{took:?}"
    );
    let (_, err) = read_all(&mut idle);
    assert!(err.is_none(), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
