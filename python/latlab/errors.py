"""The exceptions and warnings a latlab user may see.

``ScenarioError`` and ``SimulationError`` are defined by the compiled core so
that errors raised in Rust arrive as these very classes. When the core is not
built, stand-ins with the same bases are used so that scenarios can still be
loaded, edited and saved, and ``except latlab.ScenarioError`` keeps working.
"""

from __future__ import annotations

from typing import Any

import click

try:
    from latlab._core import ScenarioError, SimulationError
except ImportError:  # core not built (yet): pure-Python stand-ins

    class ScenarioError(ValueError):  # type: ignore[no-redef]
        """A scenario is invalid: ``"FILE: key.path: what is wrong and what is expected"``."""

    class SimulationError(RuntimeError):  # type: ignore[no-redef]
        """The simulator failed internally (a bug, not a user mistake)."""


class CoreNotBuiltError(ImportError):
    """The compiled extension ``latlab._core`` cannot be imported."""


class ConservationWarning(RuntimeWarning):
    """A link's packet counts do not add up: arrivals != departures + drops + lost + queued.

    This always means a simulator bug; results of such a run are suspect.
    """


# The exit status of a mistake the user can fix (a bad flag, an invalid
# scenario, a missing file).
EXIT_USER_ERROR = 2


class UserError(click.ClickException):
    """A mistake the user can fix: shown as one red line, exit code 2."""

    exit_code = EXIT_USER_ERROR

    def show(self, file: Any = None) -> None:
        error_line(self.format_message())


def error_line(message: str) -> None:
    """Print ``error: message`` in red on stderr."""
    click.secho(f"error: {message}", fg="red", err=True)


__all__ = [
    "ScenarioError",
    "SimulationError",
    "CoreNotBuiltError",
    "ConservationWarning",
    "UserError",
    "EXIT_USER_ERROR",
    "error_line",
]
