//! latlab-net's integration tests, one test binary (one link step instead of
//! one per file): `cargo test --release -p latlab-net --test integration
//! [MODULE::][NAME]`. Each file is a module; `*_util` hold shared helpers, and
//! `turn` keeps tests of different files from running side by side;
//! `tcp_mem` skips a rate measurement while TCP memory is under pressure.

mod emulate_util;
#[macro_use] // skip_unless_available!
mod mptcp_util;
mod proxy_util;
#[macro_use] // skip_if_tcp_mem_unfit!
mod tcp_mem;
mod turn;

mod emulate_netns;
mod emulate_router_netns;
mod flows_netns;
mod mptcp_netns;
mod proxy_churn;
mod proxy_limits;
mod proxy_modes;
mod proxy_mptcp_netns;
mod proxy_relay;
