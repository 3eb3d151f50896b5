//! The in-kernel MPTCP path manager's events: generic netlink family
//! "mptcp_pm", multicast group "mptcp_pm_events" (include/uapi/linux/
//! mptcp_pm.h, generated from Documentation/netlink/specs/mptcp_pm.yaml).
//!
//! The kernel reports every connection (CREATED, ESTABLISHED, CLOSED), every
//! address the peer announces or removes, and every subflow (SUB_ESTABLISHED,
//! SUB_CLOSED, SUB_PRIORITY) with its 4-tuple, so a proxy learns each
//! subflow's addresses and ports without sniffing packets. Events belong to
//! the network namespace the socket was opened in.
//!
//! The generic-netlink subset needed here is small (resolve a family and a
//! group through the controller, join the group, walk netlink messages and
//! their attributes), so it is written out over a raw AF_NETLINK socket
//! rather than pulling a netlink framework in; [`decode_messages`] is a pure
//! function over bytes and answers malformed input with an error, never a
//! panic (see the tests with crafted buffers).
//!
//! A connection's token links events to sockets: the token in an event is
//! the one `getsockopt(SOL_MPTCP, MPTCP_INFO)` reports as `mptcpi_token` on
//! the accepted socket ([`super::sockopt::mptcp_info`]).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use serde::Serialize;

use super::FourTuple;

/// The family and group names (mptcp_pm.h: MPTCP_PM_NAME,
/// MPTCP_PM_EV_GRP_NAME).
pub const FAMILY_NAME: &str = "mptcp_pm";
pub const EVENTS_GROUP: &str = "mptcp_pm_events";

// linux/netlink.h and linux/genetlink.h.
const NLMSG_HDR_LEN: usize = 16;
const GENL_HDR_LEN: usize = 4;
const NLA_HDR_LEN: usize = 4;
const NLA_TYPE_MASK: u16 = 0x3fff; // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const CTRL_ATTR_MCAST_GROUPS: u16 = 7;
const CTRL_ATTR_MCAST_GRP_NAME: u16 = 1;
const CTRL_ATTR_MCAST_GRP_ID: u16 = 2;
const SOL_NETLINK: libc::c_int = 270;
const NETLINK_ADD_MEMBERSHIP: libc::c_int = 1;

// enum mptcp_event_type.
const EV_CREATED: u8 = 1;
const EV_ESTABLISHED: u8 = 2;
const EV_CLOSED: u8 = 3;
const EV_ANNOUNCED: u8 = 6;
const EV_REMOVED: u8 = 7;
const EV_SUB_ESTABLISHED: u8 = 10;
const EV_SUB_CLOSED: u8 = 11;
const EV_SUB_PRIORITY: u8 = 13;
const EV_LISTENER_CREATED: u8 = 15;
const EV_LISTENER_CLOSED: u8 = 16;

// enum mptcp_event_attr.
const ATTR_TOKEN: u16 = 1;
const ATTR_FAMILY: u16 = 2;
const ATTR_LOC_ID: u16 = 3;
const ATTR_REM_ID: u16 = 4;
const ATTR_SADDR4: u16 = 5;
const ATTR_SADDR6: u16 = 6;
const ATTR_DADDR4: u16 = 7;
const ATTR_DADDR6: u16 = 8;
const ATTR_SPORT: u16 = 9;
const ATTR_DPORT: u16 = 10;
const ATTR_BACKUP: u16 = 11;
const ATTR_ERROR: u16 = 12;
const ATTR_FLAGS: u16 = 13;
const ATTR_TIMEOUT: u16 = 14;
const ATTR_IF_IDX: u16 = 15;
const ATTR_RESET_REASON: u16 = 16;
const ATTR_RESET_FLAGS: u16 = 17;
const ATTR_SERVER_SIDE: u16 = 18;

/// A connection-level event's details (CREATED, ESTABLISHED): the token and
/// the first subflow's 4-tuple, seen from this host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnectionEvent {
    pub token: u32,
    /// AF_INET (2) or AF_INET6 (10).
    pub family: u16,
    pub tuple: FourTuple,
    /// This host is the connection's passive (listening) side.
    pub server_side: bool,
    /// MPTCP_PM_EV_FLAG_* (e.g. DENY_JOIN_ID0 = 1).
    pub flags: u16,
}

/// A subflow event's details (SUB_ESTABLISHED, SUB_CLOSED, SUB_PRIORITY).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubflowEvent {
    pub token: u32,
    pub family: u16,
    /// Local and remote address and port of the subflow, from this host.
    pub tuple: FourTuple,
    /// Path-manager address ids (0 is the connection's initial address).
    pub loc_id: u8,
    pub rem_id: u8,
    pub backup: bool,
    /// The device the subflow is bound to (0 when not bound to one).
    pub if_idx: Option<i32>,
    /// A copy of the subflow's sk_err, when the kernel set one.
    pub error: Option<u8>,
    /// TCP reset reason and flags (SUB_CLOSED after an MP_TCPRST).
    pub reset_reason: Option<u32>,
    pub reset_flags: Option<u32>,
}

/// One path-manager event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PmEvent {
    Created(ConnectionEvent),
    Established(ConnectionEvent),
    Closed {
        token: u32,
    },
    /// The peer announced an address (ADD_ADDR).
    Announced {
        token: u32,
        rem_id: u8,
        addr: IpAddr,
        port: Option<u16>,
    },
    /// The peer removed an address (REMOVE_ADDR).
    Removed {
        token: u32,
        rem_id: u8,
    },
    SubEstablished(SubflowEvent),
    SubClosed(SubflowEvent),
    SubPriority(SubflowEvent),
    ListenerCreated {
        addr: SocketAddr,
    },
    ListenerClosed {
        addr: SocketAddr,
    },
    /// An event type this decoder does not know (a newer kernel); `cmd` is
    /// its number in enum mptcp_event_type.
    Unknown {
        cmd: u8,
    },
}

impl PmEvent {
    /// The connection token, for the events that carry one.
    pub fn token(&self) -> Option<u32> {
        match self {
            PmEvent::Created(c) | PmEvent::Established(c) => Some(c.token),
            PmEvent::SubEstablished(s) | PmEvent::SubClosed(s) | PmEvent::SubPriority(s) => Some(s.token),
            PmEvent::Closed { token } | PmEvent::Announced { token, .. } | PmEvent::Removed { token, .. } => {
                Some(*token)
            }
            PmEvent::ListenerCreated { .. } | PmEvent::ListenerClosed { .. } | PmEvent::Unknown { .. } => {
                None
            }
        }
    }
}

/// What can go wrong opening the event socket or reading from it.
#[derive(Debug, thiserror::Error)]
pub enum PmError {
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        #[source]
        source: io::Error,
    },
    /// The kernel has no "mptcp_pm" family (no CONFIG_MPTCP) or the family
    /// has no events group (a kernel older than 5.12).
    #[error("generic netlink: {0}")]
    Unavailable(String),
    /// The socket's receive buffer overflowed: events were lost (ENOBUFS).
    /// The socket stays usable; a caller that tracks state should resync.
    #[error("netlink receive buffer overrun: path-manager events were lost")]
    Overrun,
    /// Bytes that are not a well-formed netlink message or event.
    #[error("malformed netlink data: {0}")]
    Malformed(String),
}

impl PmError {
    /// True for EAGAIN on a non-blocking socket: nothing to read now.
    pub fn is_would_block(&self) -> bool {
        matches!(self, PmError::Io { source, .. } if source.kind() == io::ErrorKind::WouldBlock)
    }
}

fn os_error(context: &'static str) -> PmError {
    PmError::Io {
        context,
        source: io::Error::last_os_error(),
    }
}

fn malformed(msg: impl Into<String>) -> PmError {
    PmError::Malformed(msg.into())
}

/// A netlink socket subscribed to the path manager's events, in the network
/// namespace of the thread that opened it. Non-blocking: register
/// [`AsRawFd::as_raw_fd`] with mio/tokio/poll and call [`Self::recv`] until it
/// reports [`PmError::is_would_block`].
pub struct PmEventSocket {
    fd: OwnedFd,
    family_id: u16,
    buf: Vec<u8>,
}

impl PmEventSocket {
    /// Resolve the family and its events group, join the group, and switch
    /// the socket to non-blocking mode. Needs CAP_NET_ADMIN (the group is
    /// GENL_MCAST_CAP_NET_ADMIN).
    pub fn open() -> Result<PmEventSocket, PmError> {
        // SAFETY: socket(2) with constant arguments; the fd is owned below.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if raw < 0 {
            return Err(os_error("socket(AF_NETLINK, NETLINK_GENERIC)"));
        }
        // SAFETY: raw is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut sock = PmEventSocket {
            fd,
            family_id: 0,
            buf: vec![0; 64 * 1024],
        };
        // A blocking request/reply with the controller: the kernel answers
        // before send(2) returns, but a bound keeps a broken kernel from
        // hanging the caller.
        sock.set_recv_timeout(Duration::from_secs(2))?;
        let (family_id, group_id) = sock.resolve_family()?;
        sock.family_id = family_id;
        let group = group_id;
        // SAFETY: setsockopt with a u32 option value of the right size.
        let rc = unsafe {
            libc::setsockopt(
                sock.fd.as_raw_fd(),
                SOL_NETLINK,
                NETLINK_ADD_MEMBERSHIP,
                &group as *const u32 as *const libc::c_void,
                4,
            )
        };
        if rc != 0 {
            return Err(os_error(
                "joining the mptcp_pm_events group (NETLINK_ADD_MEMBERSHIP)",
            ));
        }
        sock.set_nonblocking(true)?;
        // The default (~200 KiB) holds about a thousand events.
        sock.set_recv_buffer_bytes(1 << 20)?;
        Ok(sock)
    }

    /// The family's numeric id (its netlink message type) in this kernel.
    pub fn family_id(&self) -> u16 {
        self.family_id
    }

    pub fn set_nonblocking(&self, nonblocking: bool) -> Result<(), PmError> {
        // SAFETY: fcntl on our own descriptor.
        let flags = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(os_error("fcntl(F_GETFL)"));
        }
        let flags = if nonblocking {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        // SAFETY: as above.
        if unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, flags) } < 0 {
            return Err(os_error("fcntl(F_SETFL)"));
        }
        Ok(())
    }

    /// Make room for bursts of events (many connections opening at once)
    /// before [`PmError::Overrun`]: SO_RCVBUFFORCE (root), else SO_RCVBUF
    /// (capped by net.core.rmem_max).
    pub fn set_recv_buffer_bytes(&self, bytes: usize) -> Result<(), PmError> {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: setsockopt with a c_int of the right size.
            let rc = unsafe {
                libc::setsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    &v as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if rc == 0 {
                return Ok(());
            }
        }
        Err(os_error("setsockopt(SO_RCVBUF) on the event socket"))
    }

    fn set_recv_timeout(&self, timeout: Duration) -> Result<(), PmError> {
        let tv = libc::timeval {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_usec: timeout.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: setsockopt with a timeval of the right size.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const libc::timeval as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(os_error("setsockopt(SO_RCVTIMEO)"));
        }
        Ok(())
    }

    /// CTRL_CMD_GETFAMILY "mptcp_pm" → (family id, events group id).
    fn resolve_family(&mut self) -> Result<(u16, u32), PmError> {
        let request = getfamily_request(FAMILY_NAME, 1);
        // SAFETY: sending our own buffer to the kernel (nl_pid 0).
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                request.as_ptr() as *const libc::c_void,
                request.len(),
                0,
                &kernel as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(os_error("asking the generic netlink controller for mptcp_pm"));
        }
        let n = self.recv_raw("reading the generic netlink controller's reply")?;
        parse_getfamily_reply(&self.buf[..n], EVENTS_GROUP)
    }

    fn recv_raw(&mut self, context: &'static str) -> Result<usize, PmError> {
        // SAFETY: recv into our own buffer of the given length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr() as *mut libc::c_void,
                self.buf.len(),
                0,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ENOBUFS) {
                return Err(PmError::Overrun);
            }
            return Err(PmError::Io { context, source: err });
        }
        Ok(n as usize)
    }

    /// Read one datagram and decode the events in it (one or more).
    /// Non-blocking: `Err(e)` with `e.is_would_block()` when nothing waits.
    pub fn recv(&mut self) -> Result<Vec<PmEvent>, PmError> {
        let n = self.recv_raw("reading path-manager events")?;
        decode_messages(&self.buf[..n], self.family_id)
    }

    /// Wait up to `timeout` for events; an empty vector when none came.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Vec<PmEvent>, PmError> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: poll on one pollfd we own.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                return Ok(Vec::new());
            }
            return Err(PmError::Io {
                context: "poll on the path-manager event socket",
                source: err,
            });
        }
        if rc == 0 {
            return Ok(Vec::new());
        }
        match self.recv() {
            Err(e) if e.is_would_block() => Ok(Vec::new()),
            other => other,
        }
    }
}

impl AsRawFd for PmEventSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for PmEventSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A CTRL_CMD_GETFAMILY request for `name`.
fn getfamily_request(name: &str, seq: u32) -> Vec<u8> {
    let mut attr = Vec::new();
    let mut value = name.as_bytes().to_vec();
    value.push(0);
    put_attr(&mut attr, CTRL_ATTR_FAMILY_NAME, &value);
    let len = NLMSG_HDR_LEN + GENL_HDR_LEN + attr.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&GENL_ID_CTRL.to_ne_bytes());
    msg.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it
    msg.extend_from_slice(&[CTRL_CMD_GETFAMILY, 1, 0, 0]);
    msg.extend_from_slice(&attr);
    msg
}

fn put_attr(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
    out.extend_from_slice(&((NLA_HDR_LEN + value.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// One netlink message: its type and payload (after the 16-byte header).
struct NlMsg<'a> {
    kind: u16,
    payload: &'a [u8],
}

/// Split a datagram into netlink messages (NLMSG_ALIGN 4).
fn messages(mut buf: &[u8]) -> Result<Vec<NlMsg<'_>>, PmError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        if buf.len() < NLMSG_HDR_LEN {
            return Err(malformed(format!(
                "{} trailing bytes, shorter than a netlink header",
                buf.len()
            )));
        }
        let len = u32::from_ne_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
        let kind = u16::from_ne_bytes(buf[4..6].try_into().expect("2 bytes"));
        if len < NLMSG_HDR_LEN || len > buf.len() {
            return Err(malformed(format!(
                "netlink message length {len} outside [{NLMSG_HDR_LEN}, {}]",
                buf.len()
            )));
        }
        out.push(NlMsg {
            kind,
            payload: &buf[NLMSG_HDR_LEN..len],
        });
        let next = align4(len).min(buf.len());
        buf = &buf[next..];
    }
    Ok(out)
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Walk netlink attributes: (type without flags, value).
fn attrs(mut buf: &[u8]) -> Result<Vec<(u16, &[u8])>, PmError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        if buf.len() < NLA_HDR_LEN {
            return Err(malformed(format!(
                "{} trailing bytes, shorter than an attribute header",
                buf.len()
            )));
        }
        let len = u16::from_ne_bytes(buf[0..2].try_into().expect("2 bytes")) as usize;
        let kind = u16::from_ne_bytes(buf[2..4].try_into().expect("2 bytes")) & NLA_TYPE_MASK;
        if len < NLA_HDR_LEN || len > buf.len() {
            return Err(malformed(format!(
                "attribute {kind}: length {len} outside [{NLA_HDR_LEN}, {}]",
                buf.len()
            )));
        }
        out.push((kind, &buf[NLA_HDR_LEN..len]));
        buf = &buf[align4(len).min(buf.len())..];
    }
    Ok(out)
}

/// The netlink error carried by an NLMSG_ERROR message (0 is an ACK).
fn nlmsg_error(payload: &[u8]) -> Result<i32, PmError> {
    let code = payload
        .get(0..4)
        .ok_or_else(|| malformed("NLMSG_ERROR shorter than its error code"))?;
    Ok(i32::from_ne_bytes(code.try_into().expect("4 bytes")))
}

fn parse_getfamily_reply(buf: &[u8], group: &str) -> Result<(u16, u32), PmError> {
    for msg in messages(buf)? {
        match msg.kind {
            NLMSG_ERROR => {
                let code = nlmsg_error(msg.payload)?;
                if code == -libc::ENOENT {
                    return Err(PmError::Unavailable(format!(
                        "the kernel has no '{FAMILY_NAME}' family (MPTCP not built in?)"
                    )));
                }
                if code != 0 {
                    return Err(PmError::Io {
                        context: "CTRL_CMD_GETFAMILY mptcp_pm",
                        source: io::Error::from_raw_os_error(-code),
                    });
                }
            }
            GENL_ID_CTRL => {
                let body = msg
                    .payload
                    .get(GENL_HDR_LEN..)
                    .ok_or_else(|| malformed("controller reply shorter than a genetlink header"))?;
                let mut family_id = None;
                let mut group_id = None;
                for (kind, value) in attrs(body)? {
                    match kind {
                        CTRL_ATTR_FAMILY_ID => family_id = Some(u16_ne(value, "CTRL_ATTR_FAMILY_ID")?),
                        CTRL_ATTR_MCAST_GROUPS => {
                            for (_, grp) in attrs(value)? {
                                let mut name = None;
                                let mut id = None;
                                for (k, v) in attrs(grp)? {
                                    match k {
                                        CTRL_ATTR_MCAST_GRP_NAME => name = Some(c_string(v)),
                                        CTRL_ATTR_MCAST_GRP_ID => {
                                            id = Some(u32_ne(v, "CTRL_ATTR_MCAST_GRP_ID")?)
                                        }
                                        _ => {}
                                    }
                                }
                                if name.as_deref() == Some(group) {
                                    group_id = id;
                                }
                            }
                        }
                        _ => {}
                    }
                }
                let family_id =
                    family_id.ok_or_else(|| malformed("controller reply without CTRL_ATTR_FAMILY_ID"))?;
                let group_id = group_id.ok_or_else(|| {
                    PmError::Unavailable(format!("family '{FAMILY_NAME}' has no multicast group '{group}'"))
                })?;
                return Ok((family_id, group_id));
            }
            _ => {}
        }
    }
    Err(malformed("no reply from the generic netlink controller"))
}

fn c_string(v: &[u8]) -> String {
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    String::from_utf8_lossy(&v[..end]).into_owned()
}

fn exact<const N: usize>(v: &[u8], what: &str) -> Result<[u8; N], PmError> {
    <[u8; N]>::try_from(v).map_err(|_| malformed(format!("{what}: {} bytes, expected {N}", v.len())))
}

fn u16_ne(v: &[u8], what: &str) -> Result<u16, PmError> {
    Ok(u16::from_ne_bytes(exact::<2>(v, what)?))
}

fn u32_ne(v: &[u8], what: &str) -> Result<u32, PmError> {
    Ok(u32::from_ne_bytes(exact::<4>(v, what)?))
}

fn u8_val(v: &[u8], what: &str) -> Result<u8, PmError> {
    Ok(exact::<1>(v, what)?[0])
}

/// Decode every path-manager event in a datagram. Messages of other types
/// (NOOP, DONE, an ACK) are skipped; a netlink error is reported.
pub fn decode_messages(buf: &[u8], family_id: u16) -> Result<Vec<PmEvent>, PmError> {
    let mut events = Vec::new();
    for msg in messages(buf)? {
        match msg.kind {
            NLMSG_NOOP | NLMSG_DONE => {}
            NLMSG_OVERRUN => return Err(PmError::Overrun),
            NLMSG_ERROR => {
                let code = nlmsg_error(msg.payload)?;
                if code != 0 {
                    return Err(PmError::Io {
                        context: "netlink error message",
                        source: io::Error::from_raw_os_error(-code),
                    });
                }
            }
            kind if kind == family_id => events.push(decode_event(msg.payload)?),
            _ => {}
        }
    }
    Ok(events)
}

/// The attributes of one event, each `None` until seen.
#[derive(Default)]
struct Attrs {
    token: Option<u32>,
    family: Option<u16>,
    loc_id: Option<u8>,
    rem_id: Option<u8>,
    saddr: Option<IpAddr>,
    daddr: Option<IpAddr>,
    sport: Option<u16>,
    dport: Option<u16>,
    backup: Option<u8>,
    error: Option<u8>,
    flags: Option<u16>,
    if_idx: Option<i32>,
    reset_reason: Option<u32>,
    reset_flags: Option<u32>,
    server_side: Option<u8>,
}

/// Decode one generic-netlink payload (genlmsghdr + attributes) whose
/// command is an mptcp_event_type.
pub fn decode_event(payload: &[u8]) -> Result<PmEvent, PmError> {
    if payload.len() < GENL_HDR_LEN {
        return Err(malformed("event shorter than a genetlink header"));
    }
    let cmd = payload[0];
    let mut a = Attrs::default();
    for (kind, v) in attrs(&payload[GENL_HDR_LEN..])? {
        match kind {
            ATTR_TOKEN => a.token = Some(u32_ne(v, "MPTCP_ATTR_TOKEN")?),
            ATTR_FAMILY => a.family = Some(u16_ne(v, "MPTCP_ATTR_FAMILY")?),
            ATTR_LOC_ID => a.loc_id = Some(u8_val(v, "MPTCP_ATTR_LOC_ID")?),
            ATTR_REM_ID => a.rem_id = Some(u8_val(v, "MPTCP_ATTR_REM_ID")?),
            // Addresses and ports are in network byte order.
            ATTR_SADDR4 => a.saddr = Some(IpAddr::V4(Ipv4Addr::from(exact::<4>(v, "MPTCP_ATTR_SADDR4")?))),
            ATTR_DADDR4 => a.daddr = Some(IpAddr::V4(Ipv4Addr::from(exact::<4>(v, "MPTCP_ATTR_DADDR4")?))),
            ATTR_SADDR6 => a.saddr = Some(IpAddr::V6(Ipv6Addr::from(exact::<16>(v, "MPTCP_ATTR_SADDR6")?))),
            ATTR_DADDR6 => a.daddr = Some(IpAddr::V6(Ipv6Addr::from(exact::<16>(v, "MPTCP_ATTR_DADDR6")?))),
            ATTR_SPORT => a.sport = Some(u16::from_be_bytes(exact::<2>(v, "MPTCP_ATTR_SPORT")?)),
            ATTR_DPORT => a.dport = Some(u16::from_be_bytes(exact::<2>(v, "MPTCP_ATTR_DPORT")?)),
            ATTR_BACKUP => a.backup = Some(u8_val(v, "MPTCP_ATTR_BACKUP")?),
            ATTR_ERROR => a.error = Some(u8_val(v, "MPTCP_ATTR_ERROR")?),
            ATTR_FLAGS => a.flags = Some(u16_ne(v, "MPTCP_ATTR_FLAGS")?),
            ATTR_TIMEOUT => {
                u32_ne(v, "MPTCP_ATTR_TIMEOUT")?;
            }
            ATTR_IF_IDX => a.if_idx = Some(u32_ne(v, "MPTCP_ATTR_IF_IDX")? as i32),
            ATTR_RESET_REASON => a.reset_reason = Some(u32_ne(v, "MPTCP_ATTR_RESET_REASON")?),
            ATTR_RESET_FLAGS => a.reset_flags = Some(u32_ne(v, "MPTCP_ATTR_RESET_FLAGS")?),
            // A flag attribute (empty) in newer kernels, a u8 in 6.7-6.9.
            ATTR_SERVER_SIDE => a.server_side = Some(v.first().copied().unwrap_or(1)),
            _ => {} // attributes newer than this decoder
        }
    }
    let name = event_name(cmd);
    let need = |what: &str| malformed(format!("{name} event without {what}"));
    let token = || a.token.ok_or_else(|| need("MPTCP_ATTR_TOKEN"));
    let tuple = || -> Result<FourTuple, PmError> {
        Ok(FourTuple {
            local: SocketAddr::new(
                a.saddr.ok_or_else(|| need("MPTCP_ATTR_SADDR4/6"))?,
                a.sport.ok_or_else(|| need("MPTCP_ATTR_SPORT"))?,
            ),
            remote: SocketAddr::new(
                a.daddr.ok_or_else(|| need("MPTCP_ATTR_DADDR4/6"))?,
                a.dport.ok_or_else(|| need("MPTCP_ATTR_DPORT"))?,
            ),
        })
    };
    let family = || -> Result<u16, PmError> { a.family.ok_or_else(|| need("MPTCP_ATTR_FAMILY")) };
    let connection = || -> Result<ConnectionEvent, PmError> {
        Ok(ConnectionEvent {
            token: token()?,
            family: family()?,
            tuple: tuple()?,
            server_side: a.server_side.is_some_and(|s| s != 0),
            flags: a.flags.unwrap_or(0),
        })
    };
    let subflow = || -> Result<SubflowEvent, PmError> {
        Ok(SubflowEvent {
            token: token()?,
            family: family()?,
            tuple: tuple()?,
            loc_id: a.loc_id.ok_or_else(|| need("MPTCP_ATTR_LOC_ID"))?,
            rem_id: a.rem_id.ok_or_else(|| need("MPTCP_ATTR_REM_ID"))?,
            backup: a.backup.is_some_and(|b| b != 0),
            if_idx: a.if_idx,
            error: a.error,
            reset_reason: a.reset_reason,
            reset_flags: a.reset_flags,
        })
    };
    let listener = || -> Result<SocketAddr, PmError> {
        Ok(SocketAddr::new(
            a.saddr.ok_or_else(|| need("MPTCP_ATTR_SADDR4/6"))?,
            a.sport.ok_or_else(|| need("MPTCP_ATTR_SPORT"))?,
        ))
    };
    Ok(match cmd {
        EV_CREATED => PmEvent::Created(connection()?),
        EV_ESTABLISHED => PmEvent::Established(connection()?),
        EV_CLOSED => PmEvent::Closed { token: token()? },
        EV_ANNOUNCED => PmEvent::Announced {
            token: token()?,
            rem_id: a.rem_id.ok_or_else(|| need("MPTCP_ATTR_REM_ID"))?,
            addr: a.daddr.ok_or_else(|| need("MPTCP_ATTR_DADDR4/6"))?,
            port: a.dport.filter(|&p| p != 0),
        },
        EV_REMOVED => PmEvent::Removed {
            token: token()?,
            rem_id: a.rem_id.ok_or_else(|| need("MPTCP_ATTR_REM_ID"))?,
        },
        EV_SUB_ESTABLISHED => PmEvent::SubEstablished(subflow()?),
        EV_SUB_CLOSED => PmEvent::SubClosed(subflow()?),
        EV_SUB_PRIORITY => PmEvent::SubPriority(subflow()?),
        EV_LISTENER_CREATED => PmEvent::ListenerCreated { addr: listener()? },
        EV_LISTENER_CLOSED => PmEvent::ListenerClosed { addr: listener()? },
        cmd => PmEvent::Unknown { cmd },
    })
}

fn event_name(cmd: u8) -> &'static str {
    match cmd {
        EV_CREATED => "CREATED",
        EV_ESTABLISHED => "ESTABLISHED",
        EV_CLOSED => "CLOSED",
        EV_ANNOUNCED => "ANNOUNCED",
        EV_REMOVED => "REMOVED",
        EV_SUB_ESTABLISHED => "SUB_ESTABLISHED",
        EV_SUB_CLOSED => "SUB_CLOSED",
        EV_SUB_PRIORITY => "SUB_PRIORITY",
        EV_LISTENER_CREATED => "LISTENER_CREATED",
        EV_LISTENER_CLOSED => "LISTENER_CLOSED",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAMILY: u16 = 0x1d;

    fn event(cmd: u8, attrs: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![cmd, 1, 0, 0];
        for (k, v) in attrs {
            put_attr(&mut body, *k, v);
        }
        let mut msg = Vec::new();
        msg.extend_from_slice(&((NLMSG_HDR_LEN + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&FAMILY.to_ne_bytes());
        msg.extend_from_slice(&[0; 10]);
        msg.extend_from_slice(&body);
        msg
    }

    fn sub_attrs() -> Vec<(u16, Vec<u8>)> {
        vec![
            (ATTR_TOKEN, 0xdead_beefu32.to_ne_bytes().to_vec()),
            (ATTR_FAMILY, 2u16.to_ne_bytes().to_vec()),
            (ATTR_LOC_ID, vec![0]),
            (ATTR_REM_ID, vec![2]),
            (ATTR_SADDR4, vec![10, 0, 1, 1]),
            (ATTR_DADDR4, vec![10, 0, 2, 2]),
            (ATTR_SPORT, 5001u16.to_be_bytes().to_vec()),
            (ATTR_DPORT, 40000u16.to_be_bytes().to_vec()),
            (ATTR_BACKUP, vec![1]),
            (ATTR_IF_IDX, 7u32.to_ne_bytes().to_vec()),
        ]
    }

    #[test]
    fn decodes_a_subflow_event() {
        let buf = event(EV_SUB_ESTABLISHED, &sub_attrs());
        let events = decode_messages(&buf, FAMILY).unwrap();
        let expected = SubflowEvent {
            token: 0xdead_beef,
            family: 2,
            tuple: FourTuple {
                local: "10.0.1.1:5001".parse().unwrap(),
                remote: "10.0.2.2:40000".parse().unwrap(),
            },
            loc_id: 0,
            rem_id: 2,
            backup: true,
            if_idx: Some(7),
            error: None,
            reset_reason: None,
            reset_flags: None,
        };
        assert_eq!(events, vec![PmEvent::SubEstablished(expected)]);
        assert_eq!(events[0].token(), Some(0xdead_beef));
    }

    #[test]
    fn decodes_several_messages_in_one_datagram_and_ipv6() {
        let mut buf = event(EV_CLOSED, &[(ATTR_TOKEN, 9u32.to_ne_bytes().to_vec())]);
        let v6: Ipv6Addr = "fd00::1".parse().unwrap();
        buf.extend(event(
            EV_ANNOUNCED,
            &[
                (ATTR_TOKEN, 9u32.to_ne_bytes().to_vec()),
                (ATTR_REM_ID, vec![3]),
                (ATTR_FAMILY, 10u16.to_ne_bytes().to_vec()),
                (ATTR_DADDR6, v6.octets().to_vec()),
            ],
        ));
        let events = decode_messages(&buf, FAMILY).unwrap();
        assert_eq!(
            events,
            vec![
                PmEvent::Closed { token: 9 },
                PmEvent::Announced {
                    token: 9,
                    rem_id: 3,
                    addr: IpAddr::V6(v6),
                    port: None
                }
            ]
        );
    }

    #[test]
    fn other_families_and_unknown_attributes_and_events_are_skipped() {
        let mut attrs = sub_attrs();
        attrs.push((200, vec![1, 2, 3])); // an attribute from a future kernel
        let mut buf = event(EV_SUB_CLOSED, &attrs);
        buf[4..6].copy_from_slice(&(FAMILY + 1).to_ne_bytes());
        assert!(decode_messages(&buf, FAMILY).unwrap().is_empty());
        let buf = event(EV_SUB_CLOSED, &attrs);
        assert!(matches!(
            decode_messages(&buf, FAMILY).unwrap()[0],
            PmEvent::SubClosed(_)
        ));
        let buf = event(99, &[]);
        assert_eq!(
            decode_messages(&buf, FAMILY).unwrap(),
            vec![PmEvent::Unknown { cmd: 99 }]
        );
    }

    #[test]
    fn json_lines_name_the_event() {
        let buf = event(EV_SUB_ESTABLISHED, &sub_attrs());
        let ev = &decode_messages(&buf, FAMILY).unwrap()[0];
        let json = serde_json::to_string(ev).unwrap();
        assert!(
            json.starts_with(r#"{"event":"sub_established","token":3735928559"#),
            "{json}"
        );
        assert!(json.contains(r#""local":"10.0.1.1:5001""#), "{json}");
    }

    #[test]
    fn missing_required_attribute_is_an_error_naming_it() {
        let attrs: Vec<_> = sub_attrs()
            .into_iter()
            .filter(|(k, _)| *k != ATTR_SPORT)
            .collect();
        let err = decode_messages(&event(EV_SUB_ESTABLISHED, &attrs), FAMILY).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed netlink data: SUB_ESTABLISHED event without MPTCP_ATTR_SPORT"
        );
    }

    #[test]
    fn malformed_buffers_are_errors_never_panics() {
        let good = event(EV_SUB_ESTABLISHED, &sub_attrs());
        // Every truncation and every single-byte corruption of a good
        // message decodes or fails cleanly.
        for cut in 0..good.len() {
            let _ = decode_messages(&good[..cut], FAMILY);
        }
        for i in 0..good.len() {
            for b in [0u8, 1, 3, 4, 0x7f, 0xff] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = decode_messages(&bad, FAMILY);
            }
        }
        // Specific shapes: a netlink length beyond the buffer, an attribute
        // length below its header, a wrong-sized address.
        let mut bad = good.clone();
        bad[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(matches!(
            decode_messages(&bad, FAMILY),
            Err(PmError::Malformed(_))
        ));
        let mut bad = good.clone();
        bad[NLMSG_HDR_LEN + GENL_HDR_LEN..][..2].copy_from_slice(&2u16.to_ne_bytes());
        assert!(matches!(
            decode_messages(&bad, FAMILY),
            Err(PmError::Malformed(_))
        ));
        let mut attrs = sub_attrs();
        attrs[4].1 = vec![10, 0, 1];
        let err = decode_messages(&event(EV_SUB_ESTABLISHED, &attrs), FAMILY).unwrap_err();
        assert!(
            err.to_string().contains("MPTCP_ATTR_SADDR4: 3 bytes, expected 4"),
            "{err}"
        );
        assert!(matches!(
            decode_messages(&[1, 2, 3], FAMILY),
            Err(PmError::Malformed(_))
        ));
        assert!(decode_messages(&[], FAMILY).unwrap().is_empty());
    }

    #[test]
    fn netlink_errors_and_overruns_are_reported() {
        let mut msg = Vec::new();
        msg.extend_from_slice(&20u32.to_ne_bytes());
        msg.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        msg.extend_from_slice(&[0; 10]);
        msg.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
        let err = decode_messages(&msg, FAMILY).unwrap_err();
        assert!(matches!(err, PmError::Io { .. }), "{err}");
        msg[4..6].copy_from_slice(&NLMSG_OVERRUN.to_ne_bytes());
        assert!(matches!(decode_messages(&msg, FAMILY), Err(PmError::Overrun)));
    }

    #[test]
    fn controller_reply_gives_family_and_group() {
        let mut grp = Vec::new();
        put_attr(&mut grp, CTRL_ATTR_MCAST_GRP_NAME, b"mptcp_pm_cmds\0");
        put_attr(&mut grp, CTRL_ATTR_MCAST_GRP_ID, &11u32.to_ne_bytes());
        let mut grp2 = Vec::new();
        put_attr(&mut grp2, CTRL_ATTR_MCAST_GRP_NAME, b"mptcp_pm_events\0");
        put_attr(&mut grp2, CTRL_ATTR_MCAST_GRP_ID, &12u32.to_ne_bytes());
        let mut groups = Vec::new();
        put_attr(&mut groups, 1, &grp);
        put_attr(&mut groups, 2, &grp2);
        let mut body = vec![1, 2, 0, 0];
        put_attr(&mut body, CTRL_ATTR_FAMILY_NAME, b"mptcp_pm\0");
        put_attr(&mut body, CTRL_ATTR_FAMILY_ID, &0x1du16.to_ne_bytes());
        put_attr(&mut body, CTRL_ATTR_MCAST_GROUPS | 0x8000, &groups);
        let mut msg = Vec::new();
        msg.extend_from_slice(&((NLMSG_HDR_LEN + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&GENL_ID_CTRL.to_ne_bytes());
        msg.extend_from_slice(&[0; 10]);
        msg.extend_from_slice(&body);
        assert_eq!(parse_getfamily_reply(&msg, EVENTS_GROUP).unwrap(), (0x1d, 12));
        assert!(matches!(
            parse_getfamily_reply(&msg, "nope"),
            Err(PmError::Unavailable(_))
        ));
        // The request names the family, NUL-terminated, after the headers.
        let req = getfamily_request("mptcp_pm", 1);
        assert_eq!(&req[24..33], b"mptcp_pm\0");
        assert_eq!(
            u32::from_ne_bytes(req[0..4].try_into().unwrap()) as usize,
            req.len()
        );
    }
}
