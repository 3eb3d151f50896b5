"""Benchmarks of the simulator: ``latlab bench`` and ``latlab bench --scale``.

``suite`` runs the standard scenarios, each in a fresh process; ``measure`` is
that process (standard library and ``latlab._core`` only, so its peak memory
is the run's own); ``scale`` measures how the cost grows with the flow count.
"""
