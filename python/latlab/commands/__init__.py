"""Sub-commands of ``latlab`` beyond run/validate/bench, one module each.

Every module here defines ``register(cli: click.Group) -> None``; ``latlab.cli``
imports them all at start-up, so adding a command means adding a module
(no shared file to edit). Keep module-level imports light: ``latlab --help``
must answer instantly.
"""
