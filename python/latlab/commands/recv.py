"""``latlab recv``: a TCP sink whose advertised window a receiver-window controller sets.

The engine is the Rust binary ``latlab-net recv`` (crates/net/src/recv):
it accepts one connection, reads everything, and moves the kernel's
``TCP_WINDOW_CLAMP`` to the window of one of latlab's controllers (Linux
auto-tuning, DRWA or RTAC; the same code the simulator runs), recording
goodput, the kernel's RTT estimate, the controller's RTT and window per
interval. The binary is found as for ``latlab media`` (``latlab.real.netbin``).

Unlike ``latlab proxy``, the options are declared here too, so that help
and mistakes look like every other ``latlab`` command (one ``error:`` line,
exit code 2) before the binary starts; the binary still checks the
controller's parameters (``--param``) against the controller.
tests/python/test_recv_cli.py checks that both sides list the same options.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import click

from latlab.errors import UserError
from latlab.real.netbin import BUILD_HINT, find_binary, run_binary

#: The controllers ``latlab-net recv --controller`` accepts (crates/net/src/cli.rs).
CONTROLLERS = ("autotuning", "drwa", "rtac")


class SocketAddress(click.ParamType):
    """ADDR:PORT, IPv6 addresses in brackets ([::1]:5001), as Rust's SocketAddr parses it."""

    name = "ADDR:PORT"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        host, sep, port = str(value).rpartition(":")
        try:
            if not sep or not port.isdigit() or int(port) > 65535:
                raise ValueError
            if host.startswith("[") and host.endswith("]"):
                ipaddress.IPv6Address(host[1:-1])
            else:
                ipaddress.IPv4Address(host)
        except ValueError:
            self.fail(
                f"expected ADDR:PORT such as 0.0.0.0:5001 or [::1]:5001, got {value!r}", param, ctx
            )
        return str(value)


class Controller(click.Choice):
    """click.Choice whose "missing" message fits on the one error line."""

    def get_missing_message(self, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        return f"choose from {', '.join(self.choices)}"


def _key_value(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> tuple:
    for v in values:
        key, sep, number = v.partition("=")
        try:
            float(number)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE with a number, got {v!r}")
    return values


def binary_args(
    listen: str,
    controller: str,
    params: tuple[str, ...],
    duration_s: float | None,
    record: Path | None,
    summary: Path | None,
    interval_ms: float,
    quiet: bool,
) -> list[str]:
    """The ``latlab-net recv`` arguments for these options."""
    args = ["--listen", listen, "--controller", controller]
    for p in params:
        args += ["--param", p]
    if duration_s is not None:
        args += ["--duration-s", repr(duration_s)]
    if record is not None:
        args += ["--record", str(record)]
    if summary is not None:
        args += ["--summary", str(summary)]
    args += ["--interval-ms", repr(interval_ms)]
    if quiet:
        args.append("--quiet")
    return args


def register(cli: click.Group) -> None:
    @cli.command("recv")
    @click.option(
        "--listen",
        required=True,
        type=SocketAddress(),
        help="Address to listen on; one connection is accepted.",
    )
    @click.option(
        "--controller",
        required=True,
        type=Controller(CONTROLLERS),
        help="The receiver-window controller (see Controllers above).",
    )
    @click.option(
        "--param",
        "params",
        multiple=True,
        metavar="KEY=VALUE",
        callback=_key_value,
        help="A controller constant (repeatable), as in the scenario table rwnd_params, "
        "e.g. rmem_max_bytes=2621440.",
    )
    @click.option(
        "--duration-s",
        "duration_s",
        type=click.FloatRange(min=0, min_open=True),
        metavar="S",
        help="Stop after this long  [default: when the sender closes, or Ctrl-C]",
    )
    @click.option(
        "--record",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        help="Write one CSV row per interval: goodput_bps, rcv_rtt_ms (the kernel's), "
        "controller_rtt_ms, rwnd_bytes, window_clamp_bytes, clamp_restores (times the kernel "
        "replaced the clamp and recv set it again), rcv_wnd_bytes, bytes_total.",
    )
    @click.option(
        "--summary",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        help="Write the end-of-run summary (JSON) here  [default: the record's path with "
        ".summary.json]",
    )
    @click.option(
        "--interval-ms",
        "interval_ms",
        type=click.FloatRange(min=0, min_open=True),
        default=100.0,
        show_default=True,
        metavar="MS",
        help="Interval between printed lines and recorded rows.",
    )
    @click.option(
        "-q", "--quiet", is_flag=True, help="Print nothing (record and summary are still written)."
    )
    @click.pass_context
    def recv(ctx: click.Context, **options: object) -> None:
        """A TCP sink whose advertised window a receiver-window controller sets.

        Accepts one connection and reads everything its sender sends. The
        receive buffer is fixed (twice the controller's largest window, so
        the kernel's own auto-tuning is off) and the kernel's window clamp
        follows the controller's window. Per interval it prints and records
        goodput, the kernel's RTT estimate, the controller's RTT and window,
        and the clamp the kernel holds. It stops when the sender closes,
        after --duration-s, or on Ctrl-C, and then writes the summary.

        \b
        Controllers (docs/models/receiver-window.md; --param sets their constants):
          autotuning  Linux receive-buffer auto-tuning (twice the largest delivery per RTT)
          drwa        DRWA: lambda * (RTT_min / RTT) * (delivery per RTT)
          rtac        RTAC: the window a Reno sender would hold under an emulated AQM

        Runs 'latlab-net recv' (crates/net). Exit code 0 when done, 1 for a
        run-time failure (e.g. the address is in use), 2 for a bad option.

        \b
        Examples:
          latlab recv --listen 0.0.0.0:5001 --controller autotuning --record recv.csv
          latlab recv --listen 0.0.0.0:5001 --controller drwa --param lambda=2
          latlab recv --listen 0.0.0.0:5001 --controller rtac --param theta=1.38 \\
              --param link_rate_bps=40e6 --param delta_ms=18 --record recv.csv
        Any TCP sender can feed it, e.g. from another host or namespace:
          head -c 200M /dev/zero | nc -N 10.0.0.2 5001
        """
        binary = find_binary()
        try:
            code = run_binary([str(binary), "recv", *binary_args(**options)])  # type: ignore[arg-type]
        except OSError as e:
            raise UserError(f"cannot run {binary}: {e.strerror or e}; {BUILD_HINT}") from e
        ctx.exit(code if code >= 0 else 128 - code)
