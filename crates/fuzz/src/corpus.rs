//! The seed corpora: every shipped scenario, plus the random scenarios the
//! simulator's property and golden tests generate; and slices of the
//! shipped Mahimahi traces.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../../sim/tests/common/mod.rs"]
mod sim_common;

/// How many of the test suite's random scenarios join the corpus.
const RANDOM_SCENARIOS: u64 = 16;

/// One corpus entry: where it came from and its TOML text.
#[derive(Debug, Clone)]
pub struct Seed {
    pub name: String,
    pub text: String,
    /// The parsed tree (every shipped scenario is valid TOML); empty for a
    /// trace seed.
    pub tree: toml::Table,
}

/// The repository root (this crate sits in `crates/fuzz`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toml_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            toml_files_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// Load the corpus from `root`: `scenarios/**/*.toml` (scheme files of
/// `latlab compare` aside), `python/latlab/scenarios/**/*.toml`, then the
/// random scenarios. Sorted by path, so input `i` is the same on every
/// machine.
pub fn load(root: &Path) -> Result<Vec<Seed>, String> {
    let mut files = Vec::new();
    toml_files_under(&root.join("scenarios"), &mut files);
    toml_files_under(&root.join("python/latlab/scenarios"), &mut files);
    files.sort();
    let mut seeds = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        let s = seed(name, text)?;
        // A `latlab compare` scheme file (scenarios/compare/) names a path
        // and schemes; it is not a scenario, and its path file is in the corpus.
        if !s.tree.contains_key("schemes") {
            seeds.push(s);
        }
    }
    if seeds.is_empty() {
        return Err(format!("no scenarios under {}", root.display()));
    }
    for case in 0..RANDOM_SCENARIOS {
        seeds.push(seed(
            format!("random_scenario({case})"),
            sim_common::random_scenario(case),
        )?);
    }
    Ok(seeds)
}

fn seed(name: String, text: String) -> Result<Seed, String> {
    let mut tree = text
        .parse::<toml::Table>()
        .map_err(|e| format!("{name}: not TOML: {e}"))?;
    // A sweep definition holds its scenario under [base].
    if let (Some(toml::Value::Table(base)), true) = (tree.get("base"), tree.contains_key("grid")) {
        tree = base.clone();
        let text = toml::to_string(&tree).map_err(|e| format!("{name}: {e}"))?;
        return Ok(Seed { name, text, tree });
    }
    Ok(Seed { name, text, tree })
}

/// Lines of a shipped trace kept in one trace seed: the shipped traces hold
/// 25 000 to 120 000 lines, and an input should parse in microseconds.
const TRACE_SLICE_LINES: [usize; 5] = [1, 2, 7, 100, 2_000];

/// Load the trace corpus from `root`: prefixes and slices (which start at
/// a nonzero timestamp) of every `python/latlab/data/traces/*.trace`,
/// sorted by path. Generated traces are made per input (targets.rs).
pub fn load_traces(root: &Path) -> Result<Vec<Seed>, String> {
    let dir = root.join("python/latlab/data/traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    let mut seeds = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        let lines: Vec<&str> = text.lines().collect();
        for n in TRACE_SLICE_LINES {
            // A prefix, and a slice from the middle of the file.
            for from in [0, lines.len() / 2] {
                let to = (from + n).min(lines.len());
                let mut slice = lines[from..to].join("\n");
                slice.push('\n');
                seeds.push(Seed {
                    name: format!("{name}[{from}..{to}]"),
                    text: slice,
                    tree: toml::Table::new(),
                });
            }
        }
    }
    if seeds.is_empty() {
        return Err(format!("no *.trace files under {}", dir.display()));
    }
    Ok(seeds)
}
