"""``latlab proxy``: the MPTCP-to-TCP converter, ``latlab-net proxy``.

A thin pass-through to the Rust binary (crates/net/src/proxy): it listens
with MPTCP (plain TCP clients fall back on the same socket), connects to a
fixed upstream (``--to``), or acts as an HTTP forward proxy or a SOCKS 5
proxy, and relays both directions with splice(2). Every option is the
binary's; ``latlab proxy --help`` shows them. The binary is found as for
``latlab media``.
"""

from __future__ import annotations

import click

from latlab.errors import UserError
from latlab.real.netbin import BUILD_HINT, find_binary, run_binary


def register(cli: click.Group) -> None:
    @cli.command(
        "proxy",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def proxy(ctx: click.Context, args: tuple[str, ...]) -> None:
        """MPTCP-to-TCP proxy: MPTCP clients in front of a plain TCP server.

        \b
        Examples:
          latlab proxy --listen 0.0.0.0:8000 --to 10.0.1.2:80
          latlab proxy --listen 0.0.0.0:3128 --mode http --events ev.jsonl --metrics 127.0.0.1:9100

        Arguments go to 'latlab-net proxy'; '--help' shows them.
        """

        binary = find_binary()
        try:
            code = run_binary([str(binary), "proxy", *args])
        except OSError as e:
            raise UserError(f"cannot run {binary}: {e.strerror or e}; {BUILD_HINT}") from e
        ctx.exit(code if code >= 0 else 128 - code)
