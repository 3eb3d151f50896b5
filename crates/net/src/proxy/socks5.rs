//! `--mode socks5`: the server side of RFC 1928's negotiation, with the
//! "no authentication" method (0x00) and the CONNECT command, to IPv4,
//! IPv6 and domain-name addresses.
//!
//! The client may send its request right behind its greeting without
//! waiting for the method reply; [`parse`] takes all bytes received so far.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// RFC 1928 §6 reply codes.
pub const REP_SUCCEEDED: u8 = 0x00;
pub const REP_GENERAL_FAILURE: u8 = 0x01;
pub const REP_NETWORK_UNREACHABLE: u8 = 0x03;
pub const REP_HOST_UNREACHABLE: u8 = 0x04;
pub const REP_CONNECTION_REFUSED: u8 = 0x05;
pub const REP_COMMAND_NOT_SUPPORTED: u8 = 0x07;
pub const REP_ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;

const VERSION: u8 = 5;
const METHOD_NO_AUTH: u8 = 0x00;
const NO_ACCEPTABLE_METHODS: u8 = 0xFF;
const CMD_CONNECT: u8 = 0x01;

/// Where the request asks to connect.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    Addr(SocketAddr),
    Domain(String, u16),
}

#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Read more.
    Partial,
    /// Only the greeting is complete: send [`METHOD_REPLY`] (if not yet)
    /// and read more.
    Greeted,
    /// Connect; `rest` is what followed the request.
    Connect { target: Target, rest: Vec<u8> },
    /// Send `reply` and close; `why` is for the log.
    Refuse { reply: Vec<u8>, why: &'static str },
}

/// The method selection reply: version 5, no authentication.
pub const METHOD_REPLY: [u8; 2] = [VERSION, METHOD_NO_AUTH];

/// Parse the client's bytes so far.
pub fn parse(buf: &[u8]) -> Parsed {
    // Greeting: VER NMETHODS METHODS[NMETHODS] (§3).
    if buf.is_empty() {
        return Parsed::Partial;
    }
    if buf[0] != VERSION {
        // Not SOCKS 5: close without a reply (there is no format to answer in).
        return Parsed::Refuse {
            reply: Vec::new(),
            why: "not SOCKS version 5",
        };
    }
    let Some(&n_methods) = buf.get(1) else {
        return Parsed::Partial;
    };
    let greeting_len = 2 + n_methods as usize;
    if buf.len() < greeting_len {
        return Parsed::Partial;
    }
    if !buf[2..greeting_len].contains(&METHOD_NO_AUTH) {
        return Parsed::Refuse {
            reply: vec![VERSION, NO_ACCEPTABLE_METHODS],
            why: "no acceptable authentication method",
        };
    }
    // Request: VER CMD RSV ATYP DST.ADDR DST.PORT (§4).
    let req = &buf[greeting_len..];
    if req.len() < 4 {
        return if req.is_empty() || req[0] == VERSION {
            Parsed::Greeted
        } else {
            refuse(REP_GENERAL_FAILURE, "bad request version")
        };
    }
    if req[0] != VERSION {
        return refuse(REP_GENERAL_FAILURE, "bad request version");
    }
    let (addr_len, target_at) = match req[3] {
        0x01 => (4, 4),
        0x04 => (16, 4),
        0x03 => match req.get(4) {
            Some(&0) => return refuse(REP_GENERAL_FAILURE, "empty domain name"),
            Some(&n) => (n as usize, 5),
            None => return Parsed::Greeted,
        },
        _ => return refuse(REP_ADDRESS_TYPE_NOT_SUPPORTED, "address type not supported"),
    };
    let end = target_at + addr_len + 2;
    if req.len() < end {
        return Parsed::Greeted;
    }
    if req[1] != CMD_CONNECT {
        return refuse(REP_COMMAND_NOT_SUPPORTED, "command not supported (only CONNECT)");
    }
    let port = u16::from_be_bytes([req[end - 2], req[end - 1]]);
    let a = &req[target_at..target_at + addr_len];
    let target = match req[3] {
        0x01 => Target::Addr(SocketAddr::new(
            Ipv4Addr::new(a[0], a[1], a[2], a[3]).into(),
            port,
        )),
        0x04 => {
            let octets: [u8; 16] = a.try_into().expect("16 bytes");
            Target::Addr(SocketAddr::new(Ipv6Addr::from(octets).into(), port))
        }
        _ => match std::str::from_utf8(a) {
            Ok(name)
                if name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) =>
            {
                Target::Domain(name.to_string(), port)
            }
            _ => return refuse(REP_GENERAL_FAILURE, "bad domain name"),
        },
    };
    Parsed::Connect {
        target,
        rest: req[end..].to_vec(),
    }
}

fn refuse(rep: u8, why: &'static str) -> Parsed {
    Parsed::Refuse {
        reply: reply(rep, None),
        why,
    }
}

/// A reply (§6): VER REP RSV ATYP BND.ADDR BND.PORT; the bound address is
/// the proxy's end of the upstream connection on success, 0.0.0.0:0 else.
pub fn reply(rep: u8, bound: Option<SocketAddr>) -> Vec<u8> {
    let bound = bound.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    let mut out = vec![VERSION, rep, 0];
    match bound {
        SocketAddr::V4(a) => {
            out.push(0x01);
            out.extend_from_slice(&a.ip().octets());
        }
        SocketAddr::V6(a) => {
            out.push(0x04);
            out.extend_from_slice(&a.ip().octets());
        }
    }
    out.extend_from_slice(&bound.port().to_be_bytes());
    out
}

/// The reply code for a failed upstream connection (§6).
pub fn reply_code_for(e: &std::io::Error) -> u8 {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => REP_CONNECTION_REFUSED,
        Some(libc::ENETUNREACH) => REP_NETWORK_UNREACHABLE,
        Some(libc::EHOSTUNREACH) => REP_HOST_UNREACHABLE,
        // A connect timeout: the host did not answer.
        Some(libc::ETIMEDOUT) => REP_HOST_UNREACHABLE,
        _ if e.kind() == std::io::ErrorKind::NotFound => REP_HOST_UNREACHABLE,
        _ => REP_GENERAL_FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_greeting_and_request() {
        assert_eq!(parse(&[5]), Parsed::Partial);
        assert_eq!(parse(&[5, 1, 0]), Parsed::Greeted);
        assert_eq!(parse(&[5, 1, 0, 5, 1, 0]), Parsed::Greeted);
        let ok = parse(&[5, 2, 2, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90, b'x']);
        assert_eq!(
            ok,
            Parsed::Connect {
                target: Target::Addr("127.0.0.1:8080".parse().unwrap()),
                rest: b"x".to_vec()
            }
        );
        let mut v6 = vec![5, 1, 0, 5, 1, 0, 4];
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0, 80]);
        assert!(
            matches!(parse(&v6), Parsed::Connect { target: Target::Addr(a), .. } if a == "[::1]:80".parse().unwrap())
        );
        let mut dom = vec![5, 1, 0, 5, 1, 0, 3, 9];
        dom.extend_from_slice(b"localhost");
        dom.extend_from_slice(&[0, 80]);
        assert!(
            matches!(parse(&dom), Parsed::Connect { target: Target::Domain(d, 80), .. } if d == "localhost")
        );
    }

    #[test]
    fn refusals_carry_rfc_1928_codes() {
        let code = |buf: &[u8]| match parse(buf) {
            Parsed::Refuse { reply, .. } => reply,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(&[5, 1, 2]), vec![5, 0xFF]);
        assert_eq!(code(&[4, 1, 0])[..], [] as [u8; 0]);
        assert_eq!(
            code(&[5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80])[1],
            REP_COMMAND_NOT_SUPPORTED
        );
        assert_eq!(
            code(&[5, 1, 0, 5, 1, 0, 9, 1, 2])[1],
            REP_ADDRESS_TYPE_NOT_SUPPORTED
        );
        assert_eq!(code(&[5, 1, 0, 5, 1, 0, 3, 0])[1], REP_GENERAL_FAILURE);
        let refused = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(reply_code_for(&refused), REP_CONNECTION_REFUSED);
        assert_eq!(
            reply(0, Some("10.0.0.1:1080".parse().unwrap())),
            vec![5, 0, 0, 1, 10, 0, 0, 1, 4, 56]
        );
    }
}
