"""Adaptive stepping: steps grow toward ~0.2 s of wall time, never overshoot, always finish."""

from latlab import stepper


class ClockSim:
    """A simulation whose speed is fixed: ``ns_per_wall_s`` simulated ns per wall second."""

    def __init__(self, duration_ns, ns_per_wall_s, clock):
        self.duration_ns, self.now_ns, self.finished = duration_ns, 0, False
        self.rate, self.clock, self.calls, self.run_called = ns_per_wall_s, clock, [], False

    def run_until(self, t):
        self.clock[0] += (t - self.now_ns) / self.rate
        self.calls.append(t)
        self.now_ns = t

    def run(self):
        self.run_called = True
        self.finished = True


def test_planner_starts_at_one_two_hundredth():
    assert stepper.StepPlanner(200_000_000_000).step_ns == 1_000_000_000


def test_planner_converges_to_target_wall_time():
    p = stepper.StepPlanner(10**15, target_wall_s=0.2)
    rate = 5e9  # simulated ns per wall second
    for _ in range(20):
        p.observe(p.step_ns, p.step_ns / rate)
    assert abs(p.step_ns - 0.2 * rate) / (0.2 * rate) < 0.01


def test_planner_changes_gradually():
    p = stepper.StepPlanner(10**12)
    before = p.step_ns
    p.observe(before, 1e-9)  # absurdly fast step
    assert p.step_ns == before * stepper.MAX_STEP_CHANGE
    p.observe(p.step_ns, 1e9)  # absurdly slow step
    assert p.step_ns == before


def test_advance_reaches_the_end_exactly(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(stepper, "perf_counter", lambda: clock[0])
    sim = ClockSim(duration_ns=60 * 10**9, ns_per_wall_s=20e9, clock=clock)
    seen = []
    stepper.advance(sim, seen.append)
    assert sim.calls[-1] == sim.duration_ns
    assert sim.calls == sorted(sim.calls) and len(set(sim.calls)) == len(sim.calls)
    assert seen == sim.calls
    assert sim.run_called  # the core closes the books
    assert len(sim.calls) < 200  # fast run: steps grew


def test_advance_slow_run_takes_short_steps(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(stepper, "perf_counter", lambda: clock[0])
    sim = ClockSim(duration_ns=10**9, ns_per_wall_s=1e6, clock=clock)  # 1000 s of wall time
    stepper.advance(sim)
    walls = [(b - a) / 1e6 for a, b in zip([0] + sim.calls, sim.calls)]
    assert max(walls[5:]) < 0.5  # each step ~0.2 s once adapted
