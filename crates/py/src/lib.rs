//! `latlab._core`: the thin bridge between Python and the Rust simulator.
//!
//! The driving contract: `Simulation(toml_text, source, outdir)` builds a run
//! (scenario errors become `latlab._core.ScenarioError`, a `ValueError`);
//! `run_until(t_ns)` advances it (the GIL released), `run()` to the end;
//! `results()` returns one Arrow IPC stream per table, which pyarrow reads
//! without copying column by column; `conservation()` and `conservation_ok()`
//! report the end-of-run packet check. `validate(toml_text, source)` checks a
//! scenario without building it. Python's `latlab.run` is the usual caller.

use latlab_sim::budget::MemoryLimit;
use latlab_sim::tables::to_ipc_stream;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;
use std::sync::Mutex;

create_exception!(_core, ScenarioError, PyValueError, "A scenario file or dictionary is invalid: the message names the file, the key path and what is expected.");
create_exception!(
    _core,
    SimulationError,
    PyRuntimeError,
    "The simulator failed while running a valid scenario."
);

fn scenario_err(e: latlab_sim::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// The version of the latlab core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The cargo profile this extension was built with ("release" for
/// `make build`, "release-tests" for `make test`; see build.rs).
#[pyfunction]
fn build_profile() -> &'static str {
    env!("LATLAB_CARGO_PROFILE")
}

/// Parse and validate a scenario without running it. Raises ScenarioError.
#[pyfunction]
#[pyo3(signature = (toml_text, source = "<scenario>"))]
fn validate(py: Python<'_>, toml_text: &str, source: &str) -> PyResult<()> {
    py.allow_threads(|| {
        let sc = latlab_sim::parse(toml_text, source)?;
        latlab_sim::assemble::validate(&sc, source)
    })
    .map_err(scenario_err)
}

/// The TCP throughput equation of RFC 5348 §3.1 as the TFRC sender computes it
/// (b = 1, t_RTO = 4R): the rate in bytes/s for segment size `s_bytes`, RTT
/// `rtt_s` (seconds) and loss event rate `p`. Infinite for p = 0; p above 1
/// counts as 1. Exposed so Python's vectorised copy
/// (`latlab.models.tcp_equation`) can be tested against the simulator's.
#[pyfunction]
fn tcp_equation_rate(s_bytes: f64, rtt_s: f64, p: f64) -> f64 {
    latlab_proto::tfrc::throughput_bytes_per_s(s_bytes, rtt_s * latlab_proto::NS_PER_SEC as f64, p)
}

/// A built simulation, advanced step by step from Python.
///
/// The simulation is `Send` but not `Sync` (its queues and controllers are
/// trait objects); the mutex makes the Python object shareable between
/// threads, which then take turns.
#[pyclass(module = "latlab._core")]
struct Simulation {
    sim: Mutex<latlab_sim::Simulation>,
}

impl Simulation {
    fn lock(&self) -> std::sync::MutexGuard<'_, latlab_sim::Simulation> {
        // A panic inside the engine would poison the lock; the state is still
        // readable for diagnostics, so take it anyway.
        self.sim.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (toml_text, source = "<scenario>", outdir = None, max_memory_bytes = None))]
    fn new(
        py: Python<'_>,
        toml_text: &str,
        source: &str,
        outdir: Option<PathBuf>,
        max_memory_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let limit = max_memory_bytes.map_or(MemoryLimit::Machine, MemoryLimit::Bytes);
        let sim = py
            .allow_threads(|| {
                let sc = latlab_sim::parse(toml_text, source)?;
                latlab_sim::assemble::build_with_limit(&sc, source, outdir.as_deref(), limit)
            })
            .map_err(scenario_err)?;
        Ok(Simulation { sim: Mutex::new(sim) })
    }

    #[getter]
    fn name(&self) -> String {
        self.lock().name.clone()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.lock().seed
    }
    #[getter]
    fn duration_ns(&self) -> u64 {
        self.lock().duration_ns
    }
    #[getter]
    fn now_ns(&self) -> u64 {
        self.lock().now_ns
    }
    #[getter]
    fn events(&self) -> u64 {
        self.lock().events
    }
    #[getter]
    fn finished(&self) -> bool {
        self.lock().finished
    }
    #[getter]
    fn n_flows(&self) -> usize {
        self.lock().flows.len()
    }
    #[getter]
    fn n_links(&self) -> usize {
        self.lock().links.len()
    }

    /// Advance simulated time to min(t_ns, duration). Releases the GIL.
    fn run_until(&self, py: Python<'_>, t_ns: u64) -> PyResult<()> {
        let sim = &self.sim;
        py.allow_threads(|| sim.lock().unwrap_or_else(|e| e.into_inner()).run_until(t_ns));
        py.check_signals()
    }

    /// Run to the end.
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        let end = self.lock().duration_ns;
        self.run_until(py, end)
    }

    /// Result tables as {name: Arrow IPC stream bytes}. Only after the run finished.
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sim = self.lock();
        if !sim.finished {
            return Err(SimulationError::new_err(
                "the run has not finished: call run() or run_until(duration_ns) first",
            ));
        }
        if let Some(e) = &sim.pcap_error {
            return Err(SimulationError::new_err(e.clone()));
        }
        let out = PyDict::new(py);
        // The latency histogram is a results table like the others; the
        // simulator keeps it out of `tables()` only for the golden digests.
        let tables = sim
            .tables()
            .into_iter()
            .chain([("latency_histogram", sim.latency_table())]);
        for (name, batch) in tables {
            let bytes =
                to_ipc_stream(&batch).map_err(|e| SimulationError::new_err(format!("table {name}: {e}")))?;
            out.set_item(name, PyBytes::new(py, &bytes))?;
        }
        Ok(out)
    }

    /// Per-link packet conservation: arrivals = departures + drops + lost + queued.
    fn conservation<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.lock()
            .conservation()
            .into_iter()
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("link", c.link)?;
                d.set_item("arrivals", c.arrivals)?;
                d.set_item("departures", c.departures)?;
                d.set_item("drops", c.drops)?;
                d.set_item("lost", c.lost)?;
                d.set_item("queued", c.queued)?;
                d.set_item("ok", c.ok)?;
                Ok(d)
            })
            .collect()
    }

    /// True when every link conserves packets and every live packet is held by a link.
    fn conservation_ok(&self) -> bool {
        self.lock().conservation_ok()
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_equation_rate, m)?)?;
    m.add_class::<Simulation>()?;
    Ok(())
}
