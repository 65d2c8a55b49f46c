//! The variables of the test suite and the benchmark: declared as the
//! others are (see [`super::vars`]), kept apart because only development reads them.

use super::vars::development;
use super::{EnvVar, Kind};

/// `CELLBOX_TEST_PYTHON`.
pub const TEST_PYTHON: EnvVar =
    development("CELLBOX_TEST_PYTHON", "path", "`python3`", "The interpreter the test suite runs kernels with.");
/// `CELLBOX_TEST_NODE`.
pub const TEST_NODE: EnvVar =
    development("CELLBOX_TEST_NODE", "path", "`node` on PATH", "The Node.js the JavaScript tests use.");
/// `CELLBOX_TEST_NODE_FETCH`.
pub const TEST_NODE_FETCH: EnvVar = development(
    "CELLBOX_TEST_NODE_FETCH",
    "path",
    "the one `scripts/test` puts in `tests/node-fetch/node_modules`",
    "A Node.js 24 (whose own `fetch` reads the proxy variables) for the network tests.",
);
/// `CELLBOX_TEST_IRKERNEL`.
pub const TEST_IRKERNEL: EnvVar = development(
    "CELLBOX_TEST_IRKERNEL",
    "`required`",
    "",
    "Fail the R tests when IRkernel is missing, instead of skipping them (`scripts/test` sets it once it installed R).",
);
/// `CELLBOX_TEST_JJAVA`.
pub const TEST_JJAVA: EnvVar = development(
    "CELLBOX_TEST_JJAVA",
    "`required`",
    "",
    "Fail the Java tests when JJava or a JDK is missing, instead of skipping them (`scripts/test` sets it once both are there).",
);
/// `CELLBOX_TEST_CHROMIUM`.
pub const TEST_CHROMIUM: EnvVar = development(
    "CELLBOX_TEST_CHROMIUM",
    "path, or `required`",
    "",
    "The Chromium the live view's browser test drives; `required` fails that test when none is installed instead of skipping it (`scripts/test` sets it once the `chromium` package is there).",
);
/// `CELLBOX_TEST_BASE_PYTHON`.
pub const TEST_BASE_PYTHON: EnvVar = development(
    "CELLBOX_TEST_BASE_PYTHON",
    "path",
    "`python3`",
    "`scripts/test`: the Python `.venv-test` is made from.",
);
/// `CELLBOX_TEST_EG_BASE_PYTHON`.
pub const TEST_EG_BASE_PYTHON: EnvVar = development(
    "CELLBOX_TEST_EG_BASE_PYTHON",
    "path",
    "as above",
    "`scripts/test`: the Python `.venv-eg` is made from.",
);
/// `CELLBOX_TEST_EG_PYTHON`.
pub const TEST_EG_PYTHON: EnvVar = development(
    "CELLBOX_TEST_EG_PYTHON",
    "path",
    "`.venv-eg/bin/python`",
    "The Enterprise Gateway interpreter the gateway tests use.",
);
/// `CELLBOX_TEST_VENV`.
pub const TEST_VENV: EnvVar =
    development("CELLBOX_TEST_VENV", "path", "`.venv-test`", "The venv the packaging test takes its tools from.");
/// `CELLBOX_TEST_MCP_URL`.
pub const TEST_MCP_URL: EnvVar = development(
    "CELLBOX_TEST_MCP_URL",
    "URL",
    "",
    "`tests/mcp/sampling.py`: a `cellbox serve` MCP endpoint to drive over HTTP instead of starting `cellbox mcp`.",
);
/// `CELLBOX_TEST_MCP_TOKEN`.
pub const TEST_MCP_TOKEN: EnvVar = development(
    "CELLBOX_TEST_MCP_TOKEN",
    "token",
    "",
    "`tests/mcp/sampling.py`: the bearer token for `CELLBOX_TEST_MCP_URL`.",
);
/// `CELLBOX_GATEWAY_NOFILE_FOR_TEST`.
pub const GATEWAY_NOFILE_FOR_TEST: EnvVar = development(
    "CELLBOX_GATEWAY_NOFILE_FOR_TEST",
    "count",
    "",
    "An open-file limit for the shared local gateway (the EMFILE test).",
);
/// `CELLBOX_CHAOS_SECS`.
pub const CHAOS_SECS: EnvVar = development("CELLBOX_CHAOS_SECS", "seconds", "20", "How long the chaos test runs.");
/// `CELLBOX_CHAOS_SEED`.
pub const CHAOS_SEED: EnvVar =
    development("CELLBOX_CHAOS_SEED", "number", "random", "The chaos test's seed, to replay a run.");
/// `CELLBOX_FUZZ_CASES`.
pub const FUZZ_CASES: EnvVar =
    development("CELLBOX_FUZZ_CASES", "count", "200 (Rust), 100 (Python)", "Examples per fuzzing property.");
/// `CELLBOX_PARITY_FULL`.
pub const PARITY_FULL: EnvVar = development(
    "CELLBOX_PARITY_FULL",
    "boolean",
    "",
    "Run the whole notebook-parity corpus instead of its short form.",
)
.with_kind(Kind::Bool);
/// `CELLBOX_PARITY_ONLY`.
pub const PARITY_ONLY: EnvVar =
    development("CELLBOX_PARITY_ONLY", "name,…", "", "Run only the named parity notebooks.");
/// `CELLBOX_PARITY_PYTHON`.
pub const PARITY_PYTHON: EnvVar = development(
    "CELLBOX_PARITY_PYTHON",
    "path",
    "the test Python",
    "The interpreter the parity harness runs ipykernel with.",
);
/// `CELLBOX_BINARY`.
pub const BINARY: EnvVar = development(
    "CELLBOX_BINARY",
    "path",
    "the built binary",
    "The cellbox binary the benchmark and scripts/e2b-tests drive.",
);
/// `CELLBOX_BENCH_OUT`.
pub const BENCH_OUT: EnvVar =
    development("CELLBOX_BENCH_OUT", "path", "`bench/results`", "Where the benchmark writes its results.");
/// `CELLBOX_BENCH_JUPYTER_PYTHON`.
pub const BENCH_JUPYTER_PYTHON: EnvVar = development(
    "CELLBOX_BENCH_JUPYTER_PYTHON",
    "path",
    "`bench/.venv`",
    "The interpreter of the benchmark's Jupyter baselines.",
);
