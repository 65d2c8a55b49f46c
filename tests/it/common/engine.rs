//! One eval engine for a test, rooted in a temp folder of its own, and the
//! calls a test makes to it.
#![allow(dead_code)]

use std::sync::Arc;

use cellbox_engine::bridge::{Bridge, BridgeConfig};
use cellbox_engine::session::Backend;
use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalError, EvalParams, EvalResult, ignore_events};
use cellbox_kernels::gateway::GatewaySetting;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::fake_bridge::FakeBridge;

/// An engine on the interpreter under test, its cwd (and artifacts) in `dir`.
pub struct Fixture {
    pub engine: Arc<EvalEngine>,
    /// Answers the cells' host calls when the fixture was made by [`Fixture::bridged`] with a bridge.
    pub bridge: Arc<FakeBridge>,
    pub dir: tempfile::TempDir,
}

impl Fixture {
    /// [`super::engine_config`] in a fresh temp folder, changed by `tweak`.
    pub fn new(tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
        Fixture::build(None, tweak)
    }

    /// Bridge settings of their own (`BridgeConfig::default()`, not the environment's
    /// limits), the calls answered by the fixture's [`FakeBridge`] when `with_bridge`;
    /// then `tweak`.
    pub fn bridged(with_bridge: bool, tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
        Fixture::build(Some(with_bridge), tweak)
    }

    fn build(bridged: Option<bool>, tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut config = super::engine_config(dir.path());
        let bridge = Arc::new(FakeBridge::default());
        if let Some(with_bridge) = bridged {
            config.bridge = BridgeConfig::default();
            if with_bridge {
                config.bridge.bridge = Some(bridge.clone() as Arc<dyn Bridge>);
            }
        }
        tweak(&mut config);
        Fixture { engine: Arc::new(EvalEngine::new(config)), bridge, dir }
    }
}

/// [`Fixture::new`] as a function.
pub fn fixture(tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
    Fixture::new(tweak)
}

/// Kernels on the Jupyter gateway at `url` (an external one, as `--gateway-url` gives).
pub fn on_gateway(config: &mut EngineConfig, url: &str, token: &str) {
    config.backend =
        Backend::Gateway(GatewaySetting::External { url: url.to_string(), token: Some(token.to_string()) });
}

/// What the first result of a session on a gateway adds under the default sandbox, which
/// cannot reach the gateway's kernels.
pub const GATEWAY_NOTE: &str = "This session's Python kernel runs on a Jupyter gateway, outside cellbox's sandbox \
                                (sandbox workspace-write, network on): only its environment was filtered.\n";

/// Eval parameters from their JSON form.
pub fn params(value: Value) -> EvalParams {
    EvalParams::from_json(value).unwrap()
}

/// One eval call in `session`, its error kept.
pub async fn try_eval_in(engine: &EvalEngine, session: &str, params: EvalParams) -> Result<EvalResult, EvalError> {
    engine.eval(&params, &CallContext::new(session), &CancellationToken::new(), &ignore_events).await
}

/// One eval call in `session`.
pub async fn eval_in(engine: &EvalEngine, session: &str, params: EvalParams) -> EvalResult {
    engine.eval(&params, &CallContext::new(session), &CancellationToken::new(), &ignore_events).await.unwrap()
}

// The calls below hand back [`eval_in`]'s future as it is (no async layer of their own):
// a debug build's futures are large, and each layer nested in a test's future adds to its stack.

/// One cell of `code` in session `s`.
pub fn eval<'a>(engine: &'a EvalEngine, code: &str) -> impl Future<Output = EvalResult> + use<'a> {
    eval_in(engine, "s", EvalParams::code(code))
}

/// One cell of `code` with its own `timeout` (seconds) in session `s`.
pub fn eval_timed<'a>(engine: &'a EvalEngine, code: &str, timeout: f64) -> impl Future<Output = EvalResult> + use<'a> {
    eval_in(engine, "s", params(json!({"cells": [{"code": code, "timeout": timeout}]})))
}

/// A call of the JSON parameters `value` in session `s`.
pub fn eval_json(engine: &EvalEngine, value: Value) -> impl Future<Output = EvalResult> + use<'_> {
    eval_in(engine, "s", params(value))
}

/// A call of the JSON parameters `value` in `session`.
pub fn eval_json_in<'a>(
    engine: &'a EvalEngine,
    session: &'a str,
    value: Value,
) -> impl Future<Output = EvalResult> + use<'a> {
    eval_in(engine, session, params(value))
}

/// A call of the JSON parameters `value` in session `s`, its error kept.
pub fn try_eval_json(
    engine: &EvalEngine,
    value: Value,
) -> impl Future<Output = Result<EvalResult, EvalError>> + use<'_> {
    try_eval_in(engine, "s", params(value))
}
