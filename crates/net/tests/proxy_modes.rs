//! `latlab-net proxy --mode http` and `--mode socks5` over loopback: the
//! request rewritten to origin form, CONNECT tunnels, SOCKS 5 CONNECT to
//! IPv4, IPv6 and names, and every refusal (400, 431, 502; RFC 1928 reply
//! codes) followed by a clean close, with the proxy still serving.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use crate::proxy_util::*;

/// An origin that records the request head it got and answers "ok".
fn origin() -> (SocketAddr, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let (addr, _) = server(move |mut s: TcpStream| {
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        tx.send(String::from_utf8_lossy(&head).into_owned()).unwrap();
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
    (addr, rx)
}

/// Send `request`, read the whole answer until the proxy's FIN.
fn exchange(proxy: SocketAddr, request: &[u8]) -> String {
    let mut c = TcpStream::connect(proxy).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(request).unwrap();
    let (got, err) = read_all(&mut c);
    assert!(err.is_none(), "{err:?}");
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn http_forward_rewrites_to_origin_form() {
    let _turn = crate::turn::take(module_path!());
    let (origin, heads) = origin();
    let proxy = Proxy::start(&["--mode", "http"]);
    let req = format!(
        "GET http://{origin}/a/b?c=1 HTTP/1.1\r\nHost: {origin}\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
    );
    let answer = exchange(proxy.addr, req.as_bytes());
    assert!(
        answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("ok"),
        "{answer}"
    );
    let head = heads.recv_timeout(Duration::from_secs(2)).unwrap();
    assert_eq!(
        head,
        format!("GET /a/b?c=1 HTTP/1.1\r\nHost: {origin}\r\nAccept: */*\r\n\r\n")
    );
}

#[test]
fn http_connect_opens_a_tunnel() {
    let _turn = crate::turn::take(module_path!());
    let echo = echo_server();
    let proxy = Proxy::start(&["--mode", "http"]);
    let mut c = TcpStream::connect(proxy.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // The first tunnel bytes ride behind the head, as a TLS client's would.
    c.write_all(format!("CONNECT {echo} HTTP/1.1\r\nHost: {echo}\r\n\r\nearly").as_bytes())
        .unwrap();
    let want = b"HTTP/1.1 200 Connection established\r\n\r\nearly";
    let mut got = vec![0u8; want.len()];
    c.read_exact(&mut got).unwrap();
    assert_eq!(got, want);
    let data = pattern(1 << 20);
    let mut r = c.try_clone().unwrap();
    let t = std::thread::spawn(move || read_all(&mut r));
    c.write_all(&data).unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let (back, err) = t.join().unwrap();
    assert!(err.is_none() && back == data);
}

#[test]
fn http_refusals_are_answered_and_the_proxy_keeps_serving() {
    let _turn = crate::turn::take(module_path!());
    let (origin_addr, _heads) = origin();
    // An origin that reads the request and closes without a response.
    let (silent, _) = server(|mut s: TcpStream| {
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
    });
    let dir = scratch("http");
    let log = dir.join("events.jsonl");
    let proxy = Proxy::start(&[
        "--mode",
        "http",
        "--max-header-bytes",
        "2048",
        "--events",
        log.to_str().unwrap(),
        "--metrics",
        "127.0.0.1:0",
    ]);
    let status = |answer: &str| answer.split(' ').nth(1).unwrap_or("").to_string();
    let refused = closed_port();
    let cases: Vec<(String, &str)> = vec![
        (format!("GET http://{refused}/ HTTP/1.1\r\n\r\n"), "502"),
        (format!("CONNECT {refused} HTTP/1.1\r\n\r\n"), "502"),
        (format!("GET http://{silent}/ HTTP/1.1\r\n\r\n"), "502"),
        ("\x16\x03\x01\x02\x00garbage\r\n\r\n".into(), "400"),
        ("GET https://example.test/ HTTP/1.1\r\n\r\n".into(), "400"),
        ("GET / HTTP/1.1\r\n\r\n".into(), "400"),
        ("CONNECT nohostport HTTP/1.1\r\n\r\n".into(), "400"),
        (
            format!(
                "GET http://{origin_addr}/ HTTP/1.1\r\nX: {}\r\n\r\n",
                "y".repeat(4000)
            ),
            "431",
        ),
        (
            format!("GET http://{origin_addr}/ HTTP/1.1\r\nX: {}", "y".repeat(3000)),
            "431",
        ),
    ];
    for (req, want) in &cases {
        let answer = exchange(proxy.addr, req.as_bytes());
        assert_eq!(status(&answer), *want, "{req:.60?} → {answer}");
    }
    // Still serving.
    let answer = exchange(
        proxy.addr,
        format!("GET http://{origin_addr}/ HTTP/1.1\r\n\r\n").as_bytes(),
    );
    assert!(answer.ends_with("ok"), "{answer}");
    // A client that gives up inside the head is not an error.
    let mut c = TcpStream::connect(proxy.addr).unwrap();
    c.write_all(b"GET http://a/ HT").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let (got, _) = read_all(&mut c);
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 400"));
    proxy.wait_metric(
        "latlab_proxy_connections_accepted_total",
        |v| v == cases.len() as f64 + 2.0,
        Duration::from_secs(2),
    );
    proxy.wait_metric(
        "latlab_proxy_connections_active",
        |v| v == 0.0,
        Duration::from_secs(3),
    );
    assert_eq!(
        proxy.metric("latlab_proxy_errors_total{kind=\"connect_refused\"}"),
        2.0
    );
    assert_eq!(
        proxy.metric("latlab_proxy_errors_total{kind=\"header_too_large\"}"),
        2.0
    );
    assert_eq!(
        proxy.metric("latlab_proxy_errors_total{kind=\"bad_request\"}"),
        5.0
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn socks_connect(proxy: SocketAddr, request: &[u8]) -> (TcpStream, Vec<u8>) {
    let mut c = TcpStream::connect(proxy).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&[5, 1, 0]).unwrap();
    let mut method = [0u8; 2];
    c.read_exact(&mut method).unwrap();
    assert_eq!(method, [5, 0]);
    c.write_all(request).unwrap();
    let mut head = [0u8; 4];
    c.read_exact(&mut head).unwrap();
    let rest = match head[3] {
        1 => 6,
        4 => 18,
        other => panic!("reply address type {other}"),
    };
    let mut tail = vec![0u8; rest];
    c.read_exact(&mut tail).unwrap();
    (c, head.to_vec())
}

fn connect_request(atyp: u8, addr: &[u8], port: u16) -> Vec<u8> {
    let mut r = vec![5, 1, 0, atyp];
    r.extend_from_slice(addr);
    r.extend_from_slice(&port.to_be_bytes());
    r
}

#[test]
fn socks5_connects_to_ipv4_ipv6_and_names() {
    let _turn = crate::turn::take(module_path!());
    let echo_addr = echo_server();
    let proxy = Proxy::start(&["--mode", "socks5"]);
    let mut targets = vec![
        connect_request(1, &[127, 0, 0, 1], echo_addr.port()),
        connect_request(3, &[&[9u8][..], b"localhost"].concat(), echo_addr.port()),
    ];
    let echo6 = std::net::TcpListener::bind("[::1]:0").ok().map(|l| {
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || echo(s));
            }
        });
        port
    });
    match echo6 {
        Some(port) => targets.push(connect_request(4, &std::net::Ipv6Addr::LOCALHOST.octets(), port)),
        None => eprintln!("skipping the IPv6 target: no ::1"),
    }
    for req in targets {
        let (mut c, head) = socks_connect(proxy.addr, &req);
        assert_eq!(head[1], 0, "reply to {req:?}");
        c.write_all(b"through socks").unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let (got, err) = read_all(&mut c);
        assert!(err.is_none() && got == b"through socks", "{req:?}");
    }
}

#[test]
fn socks5_refusals_carry_rfc_1928_codes() {
    let _turn = crate::turn::take(module_path!());
    let proxy = Proxy::start(&["--mode", "socks5", "--metrics", "127.0.0.1:0"]);
    let refused = closed_port();
    // Refused upstream: 0x05; unsupported command (BIND): 0x07; address
    // type 9: 0x08; a name that does not resolve: 0x04.
    for (req, code) in [
        (connect_request(1, &[127, 0, 0, 1], refused.port()), 5u8),
        ([&[5u8, 2, 0, 1, 127, 0, 0, 1][..], &[0, 80]].concat(), 7),
        (vec![5, 1, 0, 9, 1, 2, 3], 8),
        (
            connect_request(3, &[&[14u8][..], b"no-such.invalid"].concat(), 80),
            4,
        ),
    ] {
        let mut c = TcpStream::connect(proxy.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(&[5, 1, 0]).unwrap();
        c.write_all(&req).unwrap();
        let (got, err) = read_all(&mut c);
        assert!(err.is_none(), "{err:?}");
        assert!(
            got.len() >= 4 && got[..2] == [5, 0] && got[2..4] == [5, code],
            "{req:?} → {got:?}"
        );
    }
    // No acceptable method: [5, 0xFF]; not SOCKS 5 at all: closed silently.
    for (greeting, want) in [
        (&[5u8, 1, 2][..], &[5u8, 0xFF][..]),
        (&[4, 1, 0, 80, 127, 0, 0, 1, 0], &[]),
    ] {
        let mut c = TcpStream::connect(proxy.addr).unwrap();
        c.write_all(greeting).unwrap();
        let (got, err) = read_all(&mut c);
        assert!(err.is_none() && got == want, "{greeting:?} → {got:?}");
    }
    // Random garbage: no crash, still serving.
    let mut c = TcpStream::connect(proxy.addr).unwrap();
    c.write_all(&pattern(10_000)).unwrap();
    let _ = read_all(&mut c);
    proxy.wait_metric(
        "latlab_proxy_connections_active",
        |v| v == 0.0,
        Duration::from_secs(3),
    );
    assert_eq!(proxy.metric("latlab_proxy_connections_accepted_total"), 7.0);
    assert_eq!(
        proxy.metric("latlab_proxy_errors_total{kind=\"connect_refused\"}"),
        1.0
    );
    assert_eq!(
        proxy.metric("latlab_proxy_errors_total{kind=\"resolve_failed\"}"),
        1.0
    );
}
