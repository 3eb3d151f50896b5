"""``latlab emulate``: a scenario's path emulated between two network namespaces.

A thin pass-through to ``latlab-net emulate`` (crates/net/src/emulate): the
Rust binary builds a client and a server namespace joined by TUN devices and
forwards packets through latlab's own queue disciplines and link models in
real time (delay, rate or trace, queue, random loss), then runs a command in
the client namespace. Every option is the binary's; ``latlab emulate
--help`` shows them. The binary is found as for ``latlab media``.
"""

from __future__ import annotations

import click

from latlab.errors import UserError
from latlab.real.netbin import BUILD_HINT, find_binary, run_binary


def register(cli: click.Group) -> None:
    @cli.command(
        "emulate",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def emulate(ctx: click.Context, args: tuple[str, ...]) -> None:
        """Emulate a scenario's path over TUN devices and run a command across it.

        \b
        Example (root; the command runs in the client namespace):
          latlab emulate scenarios/emulate-20mbit-50ms.toml --out emu -- \\
              sh -c 'curl http://$LATLAB_EMU_SERVER_ADDR:8000/file'

        Arguments go to 'latlab-net emulate'; '--help' shows them.
        """

        binary = find_binary()
        try:
            code = run_binary([str(binary), "emulate", *args])
        except OSError as e:
            raise UserError(f"cannot run {binary}: {e.strerror or e}; {BUILD_HINT}") from e
        ctx.exit(code if code >= 0 else 128 - code)
