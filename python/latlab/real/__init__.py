"""Runs on real Linux networking rather than in the simulator.

``netns`` builds network-namespace testbeds; ``netbin`` finds and runs the
``latlab-net`` binary; ``emulated`` runs a scenario's path through its
emulator (``latlab run --emulate``); ``hostload`` watches the machine for
what can spoil a real run (TCP memory pressure, CPU load).
"""
