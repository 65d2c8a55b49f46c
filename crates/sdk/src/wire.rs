//! The SDK's wire, declared once in [`cellbox_protocol::sdk`]: every method
//! with its parameters and result, the `output` notification, the error codes.

pub use cellbox_protocol::sdk::*;
use serde_json::Value;

/// An `output` notification of the request `call`.
pub fn output(call: &Value, output: Output) -> Value {
    Notification::Output(OutputParams { call: call.clone(), output }).to_value()
}
