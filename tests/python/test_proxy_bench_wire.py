"""benches/proxy_bench.py: pairing captured packets into conversion delays (no root, no namespaces)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benches" / "proxy_bench.py"
spec = importlib.util.spec_from_file_location("proxy_bench", SCRIPT)
pb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pb)

SYN, ACK, PSH = 0x02, 0x10, 0x08
LATLAB = pb.PROXY_PORT_OFFSET["latlab"]


def pkt(t_us, outgoing, src, sport, dst, dport, flags, seq, payload=0):
    return [int(t_us * 1000), 1, outgoing, src, sport, dst, dport, flags, seq, payload]


def test_syn_and_data_pair_with_what_they_become_on_the_other_side():
    c, pc, ps, s = pb.CLIENT_ADDR, pb.PROXY_C_ADDR, pb.PROXY_S_ADDR, pb.SERVER_ADDR
    banner = pb.BANNER + LATLAB
    rows = [
        # Through the proxy: the client's SYN at 0, its handshake, the upstream SYN at 40 µs.
        pkt(0, False, c, 40000, pc, banner, SYN, 7),
        pkt(2, True, pc, banner, c, 40000, SYN | ACK, 99),
        pkt(10, False, c, 40000, pc, banner, ACK, 8),
        pkt(40, True, ps, 50000, s, pb.BANNER, SYN, 1),
        pkt(41, True, ps, 50000, s, pb.BANNER, SYN, 1),  # a retransmission out is not paired again
        pkt(60, False, s, pb.BANNER, ps, 50000, SYN | ACK, 5),
        # The server's banner byte in at 100, out to the client at 118.
        pkt(100, False, s, pb.BANNER, ps, 50000, PSH | ACK, 6, payload=1),
        pkt(118, True, pc, banner, c, 40000, PSH | ACK, 100, payload=1),
        # Direct, forwarded: in at 200, the same SYN out at 202.
        pkt(200, False, c, 40001, s, pb.BANNER, SYN, 11),
        pkt(202, True, c, 40001, s, pb.BANNER, SYN, 11),
        # A packet in with nothing out within 100 ms is not paired.
        pkt(300, False, c, 40002, s, pb.ECHO, PSH | ACK, 12, payload=64),
    ]
    got = pb.wire_delays(list(reversed(rows)))  # the capture's order is not trusted
    assert got["latlab"]["syn"] == {"n": 1, "p50": 40.0, "p99": 40.0}
    assert got["latlab"]["data_s2c"]["p50"] == 18.0
    assert "data_c2s" not in got["latlab"]
    assert got["direct"] == {"syn": {"n": 1, "p50": 2.0, "p99": 2.0}}
