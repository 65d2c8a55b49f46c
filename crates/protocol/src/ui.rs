//! The live view's wire: what `/ui/api/*` takes and answers, and the messages
//! of its event stream (server-sent events, one [`LiveMessage`] as JSON in
//! each `data:`).
//!
//! The server builds every answer from these types; the page reads them
//! through `src/web/ui/assets/wire.js`, generated from here with the schema
//! `schema/ui.json` (see [`crate::schema`]), so a renamed field or event type
//! fails a test instead of leaving the page blank.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Every route of the API under `/ui/api/`, with its method.
pub const ROUTES: &[(&str, &str)] = &[
    ("LOGIN", "POST /ui/api/login"),
    ("LOGOUT", "POST /ui/api/logout"),
    ("ME", "GET /ui/api/me"),
    ("SESSIONS", "GET /ui/api/sessions"),
    ("SESSION", "GET /ui/api/session"),
    ("NOTEBOOK", "GET /ui/api/notebook"),
    ("ARTIFACT", "GET /ui/api/artifact"),
    ("EVENTS", "GET /ui/api/events"),
    ("INTERRUPT", "POST /ui/api/interrupt"),
    ("RESET", "POST /ui/api/reset"),
    ("FORK", "POST /ui/api/fork"),
    ("UNDO", "POST /ui/api/undo"),
];

/// The header every API request but the event stream carries (another
/// site's page cannot add it without a CORS preflight the server never grants).
pub const REQUEST_HEADER: &str = "X-Cellbox-UI";

/// `POST login`: a token of the server (or a one-time code) to trade for a sign-in cookie.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Login {
    pub token: String,
}

/// `POST login`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SignedIn {
    pub principal: String,
}

/// `POST logout`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SignedOut {
    pub signed_out: bool,
}

/// `GET me`: who is signed in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Me {
    pub principal: String,
    /// Whether signing in was needed (a Sign out button makes sense).
    pub auth: bool,
    /// Whether sign-in is by a one-time link (`cellbox mcp --ui`).
    pub one_time: bool,
    /// Whether this principal sees every principal's sessions (an admin token).
    pub admin: bool,
}

/// Any refusal: 4xx or 5xx with what to do next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    pub error: String,
    /// On 401 from a server that signs in by one-time links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_time: Option<bool>,
}

/// Whether a session has a kernel running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KernelState {
    Live,
    /// Stopped, hibernated or not started yet.
    Stopped,
}

/// `GET sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
}

/// One session in the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSummary {
    /// The engine's session key (what every other request names).
    pub name: String,
    /// Whose session it is (the signed-in principal's own, or another's for an admin).
    pub principal: String,
    /// A call or run is in progress.
    pub busy: bool,
    /// Its run in progress (`run://…`), if any.
    pub run: Option<String>,
    /// The languages of its live kernels.
    pub languages: Vec<String>,
    pub kernel: KernelState,
    /// Resident memory of its live kernels.
    pub resident_bytes: u64,
    /// Cells in its history.
    pub cells: usize,
    /// Checkpoints it keeps (undo is possible when there is one).
    pub checkpoints: usize,
    /// Its last call's start or end (ms since the Unix epoch).
    pub last_active_ms: Option<u64>,
}

/// The query of `GET session`, `notebook` and `events` (`session` unused by `events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionQuery {
    #[serde(default)]
    pub session: String,
    /// Another principal's (an admin only); none: the signed-in one's.
    #[serde(default)]
    pub principal: Option<String>,
    /// `notebook`: answer as a file to save.
    #[serde(default)]
    pub download: Option<String>,
}

/// `GET session`: a session as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionView {
    /// Its cells, as an nbformat 4 notebook (what `notebook` downloads).
    pub notebook: Value,
    /// For each code cell of the notebook, in order: the call that ran it and that call's full output.
    pub cells: Vec<CellMark>,
    /// Its calls running now, read before the notebook (one that ended since is in it, by its `call`).
    pub running: Vec<RunningCall>,
}

/// Where a kept cell came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellMark {
    /// The call's number (as in the events' `call`).
    pub call: Option<u64>,
    /// `artifact://…` with the call's full output, if it wrote any.
    pub artifact: Option<String>,
}

/// A call in progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunningCall {
    pub call: u64,
    pub started_ms: u64,
    pub cells: Vec<CellCode>,
}

/// A cell's code and language, as a call sent it (cut past a bound, with a note).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellCode {
    pub code: String,
    pub language: String,
}

/// The query of `GET artifact`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactQuery {
    /// `artifact://…` or its id.
    pub uri: String,
    #[serde(default)]
    pub principal: Option<String>,
}

/// `GET artifact`: a call's full output, as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactText {
    pub uri: String,
    pub text: String,
    /// Its whole size; more than `text` holds when `truncated`.
    pub total_bytes: u64,
    pub truncated: bool,
}

/// The body of every action (`interrupt`, `reset`, `fork`, `undo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionAction {
    pub session: String,
    /// Another principal's (an admin only).
    #[serde(default)]
    pub principal: Option<String>,
}

/// `POST interrupt`'s answer: kernels told to stop their cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interrupted {
    pub interrupted: usize,
}

/// `POST reset`'s answer: kernels restarted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResetDone {
    pub stopped: usize,
}

/// `POST fork`'s answer: the new session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Forked {
    /// Its key.
    pub session: String,
    /// The name an agent reaches it by.
    pub name: String,
    pub ms: f64,
}

/// `POST undo`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Undone {
    pub steps: usize,
    /// Checkpoints left.
    pub left: usize,
    pub ms: f64,
}

/// One message of the event stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiveMessage {
    /// Numbered over the engine's life (absent on `lagged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The session's key (absent on `lagged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When it happened (ms since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// The call it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    #[serde(flatten)]
    pub kind: LiveKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LiveKind {
    /// A call began with these cells.
    CallStarted {
        cells: Vec<CellCode>,
    },
    /// A call ended: its last cell's status (none: it failed before a cell ran, or was dropped).
    CallFinished {
        status: Option<String>,
        duration_ms: u64,
        artifact: Option<String>,
    },
    /// The session's kernels were restarted (its variables are gone).
    Reset,
    /// Someone acted on the session from the page (`interrupt`, `reset`, `fork`, `undo`).
    Action {
        action: String,
        by: String,
        detail: Option<String>,
    },
    CellStarted {
        cell: usize,
        title: Option<String>,
    },
    /// Text a cell printed (`name`: `stdout` or `stderr`).
    Stream {
        cell: usize,
        name: String,
        text: String,
    },
    /// A rich output (a MIME bundle), or the cell's result.
    Display {
        cell: usize,
        is_result: bool,
        bundle: Map<String, Value>,
    },
    Error {
        cell: usize,
        ename: String,
        evalue: String,
        traceback: Vec<String>,
    },
    CellFinished {
        cell: usize,
        status: String,
        duration_ms: u64,
    },
    /// A note of the engine's about the call.
    Note {
        text: String,
    },
    /// The cell waits (a kernel starting, a slot busy): what for, while it does; none once it is over.
    Waiting {
        cell: usize,
        text: Option<String>,
        elapsed_ms: u64,
    },
    /// The watcher fell behind and lost this many events: read the session again.
    Lagged {
        lost: u64,
    },
    /// The server ends this stream, and the page should not open it again by itself (a newer
    /// stream of the same sign-in took its place).
    Ended {
        reason: String,
    },
}

impl LiveKind {
    /// Every `type`, in the order declared.
    pub const TYPES: &'static [&'static str] = &[
        "call_started",
        "call_finished",
        "reset",
        "action",
        "cell_started",
        "stream",
        "display",
        "error",
        "cell_finished",
        "note",
        "waiting",
        "lagged",
        "ended",
    ];

    /// This message's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            LiveKind::CallStarted { .. } => "call_started",
            LiveKind::CallFinished { .. } => "call_finished",
            LiveKind::Reset => "reset",
            LiveKind::Action { .. } => "action",
            LiveKind::CellStarted { .. } => "cell_started",
            LiveKind::Stream { .. } => "stream",
            LiveKind::Display { .. } => "display",
            LiveKind::Error { .. } => "error",
            LiveKind::CellFinished { .. } => "cell_finished",
            LiveKind::Note { .. } => "note",
            LiveKind::Waiting { .. } => "waiting",
            LiveKind::Lagged { .. } => "lagged",
            LiveKind::Ended { .. } => "ended",
        }
    }
}

/// `schema/ui.json`: every request and answer by route, and the event stream's message.
pub fn schema() -> Value {
    use schemars::generate::SchemaSettings;
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut routes = Map::new();
    let mut route = |name: &str, request: Option<Value>, answer: Value| {
        let mut entry = Map::new();
        if let Some(request) = request {
            entry.insert("request".into(), request);
        }
        entry.insert("answer".into(), answer);
        routes.insert(name.into(), entry.into());
    };
    let value = |schema: schemars::Schema| serde_json::to_value(schema).expect("schemas serialize");
    route(
        "POST /ui/api/login",
        Some(value(generator.subschema_for::<Login>())),
        value(generator.subschema_for::<SignedIn>()),
    );
    route("POST /ui/api/logout", None, value(generator.subschema_for::<SignedOut>()));
    route("GET /ui/api/me", None, value(generator.subschema_for::<Me>()));
    route("GET /ui/api/sessions", None, value(generator.subschema_for::<SessionList>()));
    let query = value(generator.subschema_for::<SessionQuery>());
    route("GET /ui/api/session", Some(query.clone()), value(generator.subschema_for::<SessionView>()));
    route("GET /ui/api/notebook", Some(query.clone()), serde_json::json!({ "description": "an nbformat 4 notebook" }));
    route(
        "GET /ui/api/artifact",
        Some(value(generator.subschema_for::<ArtifactQuery>())),
        value(generator.subschema_for::<ArtifactText>()),
    );
    route("GET /ui/api/events", Some(query), value(generator.subschema_for::<LiveMessage>()));
    let action = value(generator.subschema_for::<SessionAction>());
    route("POST /ui/api/interrupt", Some(action.clone()), value(generator.subschema_for::<Interrupted>()));
    route("POST /ui/api/reset", Some(action.clone()), value(generator.subschema_for::<ResetDone>()));
    route("POST /ui/api/fork", Some(action.clone()), value(generator.subschema_for::<Forked>()));
    route("POST /ui/api/undo", Some(action), value(generator.subschema_for::<Undone>()));
    let failure = value(generator.subschema_for::<Failure>());
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cellbox live view API",
        "description": "The web view's API under /ui/api/ (JSON bodies; every request but `events` carries the \
                        X-Cellbox-UI header) and its event stream (server-sent events, one `event` message as JSON \
                        per `data:`). Generated from crates/protocol/src/ui.rs; see docs/live-view.md.",
        "routes": routes,
        "failure": failure,
        "$defs": generator.take_definitions(true),
    })
}

/// `src/web/ui/assets/wire.js`: the routes, the request header and the event
/// types, for the page (which reads every name of the wire from it).
pub fn javascript_module() -> String {
    let mut text = String::from(
        "// The live view's wire: its routes, request header and event types.\n\
         // Generated from crates/protocol/src/ui.rs; do not edit. Regenerate with\n\
         // `cargo run -p cellbox-protocol --example write-schema`.\n\
         \"use strict\";\n\nconst WIRE = Object.freeze({\n  header: ",
    );
    text.push_str(&format!("{REQUEST_HEADER:?},\n  routes: Object.freeze({{\n"));
    for (name, route) in ROUTES {
        let path = route.split_once(' ').map_or(*route, |(_, path)| path);
        text.push_str(&format!("    {name}: {path:?},\n"));
    }
    text.push_str("  }),\n  events: Object.freeze({\n");
    for name in LiveKind::TYPES {
        text.push_str(&format!("    {}: {name:?},\n", name.to_ascii_uppercase()));
    }
    text.push_str("  }),\n});\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_name_is_listed_once_and_matches_serde() {
        let kinds = [
            LiveKind::CallStarted { cells: vec![] },
            LiveKind::CallFinished { status: None, duration_ms: 0, artifact: None },
            LiveKind::Reset,
            LiveKind::Action { action: "interrupt".into(), by: "a".into(), detail: None },
            LiveKind::CellStarted { cell: 0, title: None },
            LiveKind::Stream { cell: 0, name: "stdout".into(), text: String::new() },
            LiveKind::Display { cell: 0, is_result: false, bundle: Map::new() },
            LiveKind::Error { cell: 0, ename: String::new(), evalue: String::new(), traceback: vec![] },
            LiveKind::CellFinished { cell: 0, status: "ok".into(), duration_ms: 0 },
            LiveKind::Note { text: String::new() },
            LiveKind::Waiting { cell: 0, text: None, elapsed_ms: 0 },
            LiveKind::Lagged { lost: 1 },
            LiveKind::Ended { reason: String::new() },
        ];
        let names: Vec<&str> = kinds.iter().map(LiveKind::type_name).collect();
        assert_eq!(names, LiveKind::TYPES);
        for kind in kinds {
            let value = serde_json::to_value(&kind).unwrap();
            assert_eq!(value["type"], kind.type_name());
        }
    }
}
