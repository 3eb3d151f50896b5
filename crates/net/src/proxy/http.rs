//! `--mode http`: the first request head of a forward-proxy connection
//! (RFC 9110 §9.3.6 CONNECT, RFC 9112 §3.2 request targets), parsed with
//! httparse.
//!
//! A request in absolute form (`GET http://host:port/path HTTP/1.1`) is
//! sent to the origin in origin form (`GET /path HTTP/1.1`, RFC 9112
//! §3.2.1), without the hop-by-hop `Proxy-Connection` and
//! `Proxy-Authorization` headers, and with a `Host` header added when the
//! client sent none. CONNECT opens a tunnel: the client gets
//! `200 Connection established` once the origin accepted the connection.
//! After the first head the connection is relayed byte for byte, so later
//! requests on a kept-alive connection go to the same origin (a server must
//! accept the absolute form, RFC 9112 §3.2.2).

/// Headers a request head may have (more: 431).
const MAX_HEADERS: usize = 100;

/// What to do with a client's first bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// The head is not complete yet: read more.
    Partial,
    /// Open a tunnel to `host:port` (CONNECT).
    Tunnel {
        host: String,
        port: u16,
        /// Bytes the client sent after the head (e.g. a TLS ClientHello).
        rest: Vec<u8>,
    },
    /// Forward `head` (rewritten, then the bytes after it) to `host:port`.
    Forward { host: String, port: u16, head: Vec<u8> },
    /// Refuse with this status (400, 431) and close; `why` is for the log.
    Refuse { status: u16, why: &'static str },
}

/// Parse `buf`, the client's bytes so far; `max_head_bytes` bounds the head.
pub fn parse(buf: &[u8], max_head_bytes: usize) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n > max_head_bytes => return too_large(),
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= max_head_bytes => return too_large(),
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return too_large(),
        Err(_) => return bad("malformed request head"),
    };
    let method = req.method.unwrap_or("");
    let target = req.path.unwrap_or("");
    let minor = req.version.unwrap_or(1);
    let rest = buf[head_len..].to_vec();
    if method.eq_ignore_ascii_case("CONNECT") {
        return match split_authority(target, None) {
            Some((host, port)) => Parsed::Tunnel { host, port, rest },
            None => bad("CONNECT needs host:port"),
        };
    }
    let host_header = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .map(str::trim);
    let (authority, path) = if let Some(after) = strip_prefix_ignore_case(target, "http://") {
        let cut = after.find(['/', '?']).unwrap_or(after.len());
        let path = &after[cut..];
        let path = if path.is_empty() {
            "/".to_string()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        (after[..cut].to_string(), path)
    } else if target.starts_with('/') {
        // Origin form sent to a proxy: the Host header names the origin.
        match host_header {
            Some(h) if !h.is_empty() => (h.to_string(), target.to_string()),
            _ => return bad("origin-form request without Host"),
        }
    } else {
        return bad("unsupported request target (only http:// absolute URIs, CONNECT or origin form)");
    };
    let authority = authority
        .rsplit_once('@')
        .map(|(_, a)| a.to_string())
        .unwrap_or(authority);
    let Some((host, port)) = split_authority(&authority, Some(80)) else {
        return bad("bad host in request target");
    };
    let mut head = Vec::with_capacity(head_len + 64);
    head.extend_from_slice(format!("{method} {path} HTTP/1.{minor}\r\n").as_bytes());
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("proxy-connection")
            || h.name.eq_ignore_ascii_case("proxy-authorization")
        {
            continue;
        }
        head.extend_from_slice(h.name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(h.value);
        head.extend_from_slice(b"\r\n");
    }
    if host_header.is_none() {
        head.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head.extend_from_slice(&rest);
    Parsed::Forward { host, port, head }
}

fn too_large() -> Parsed {
    Parsed::Refuse {
        status: 431,
        why: "request head too large",
    }
}

fn bad(why: &'static str) -> Parsed {
    Parsed::Refuse { status: 400, why }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)).then(|| &s[prefix.len()..])
}

/// `host:port`, `[v6]:port`, or `host` with `default_port`.
fn split_authority(s: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return None,
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|&p| p > 0)?,
        None => default_port?,
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
    (!host.is_empty() && host.chars().all(valid)).then(|| (host.to_string(), port))
}

/// The response sent before closing for `status` (400, 431, 502).
pub fn error_response(status: u16) -> Vec<u8> {
    let reason = match status {
        400 => "Bad Request",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        _ => "Error",
    };
    let body = format!("{status} {reason}\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sent to the client once a CONNECT tunnel's upstream is established.
pub const CONNECT_ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_form_becomes_origin_form() {
        let req = b"GET http://example.test:8080/a/b?x=1 HTTP/1.1\r\nHost: example.test:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\nBODY";
        let Parsed::Forward { host, port, head } = parse(req, 8192) else {
            panic!()
        };
        assert_eq!((host.as_str(), port), ("example.test", 8080));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a/b?x=1 HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n\r\nBODY"
        );
    }

    #[test]
    fn host_is_added_and_default_port_is_80() {
        let Parsed::Forward { host, port, head } = parse(b"GET http://10.0.0.1 HTTP/1.0\r\n\r\n", 8192)
        else {
            panic!()
        };
        assert_eq!((host.as_str(), port), ("10.0.0.1", 80));
        assert_eq!(head, b"GET / HTTP/1.0\r\nHost: 10.0.0.1\r\n\r\n");
    }

    #[test]
    fn connect_and_ipv6() {
        assert_eq!(
            parse(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\nhello", 8192),
            Parsed::Tunnel {
                host: "::1".into(),
                port: 443,
                rest: b"hello".to_vec()
            }
        );
        assert!(matches!(
            parse(b"CONNECT example.test HTTP/1.1\r\n\r\n", 8192),
            Parsed::Refuse { status: 400, .. }
        ));
    }

    #[test]
    fn partial_garbage_and_oversized() {
        assert_eq!(parse(b"GET http://a/ HTTP/1.1\r\nHo", 8192), Parsed::Partial);
        assert!(matches!(
            parse(b"\x16\x03\x01garbage\r\n\r\n", 8192),
            Parsed::Refuse { status: 400, .. }
        ));
        assert!(matches!(
            parse(b"GET https://a/ HTTP/1.1\r\n\r\n", 8192),
            Parsed::Refuse { status: 400, .. }
        ));
        let big = format!("GET http://a/ HTTP/1.1\r\nX: {}\r\n", "y".repeat(9000));
        assert!(matches!(
            parse(big.as_bytes(), 8192),
            Parsed::Refuse { status: 431, .. }
        ));
        let many: String = (0..200).map(|i| format!("X{i}: 1\r\n")).collect();
        let req = format!("GET http://a/ HTTP/1.1\r\n{many}\r\n");
        assert!(matches!(
            parse(req.as_bytes(), 1 << 20),
            Parsed::Refuse { status: 431, .. }
        ));
    }
}
