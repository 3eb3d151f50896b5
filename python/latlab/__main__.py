"""``python -m latlab`` is the ``latlab`` command."""

from latlab.cli import main

main()
