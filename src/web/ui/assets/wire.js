// The live view's wire: its routes, request header and event types.
// Generated from crates/protocol/src/ui.rs; do not edit. Regenerate with
// `cargo run -p cellbox-protocol --example write-schema`.
"use strict";

const WIRE = Object.freeze({
  header: "X-Cellbox-UI",
  routes: Object.freeze({
    LOGIN: "/ui/api/login",
    LOGOUT: "/ui/api/logout",
    ME: "/ui/api/me",
    SESSIONS: "/ui/api/sessions",
    SESSION: "/ui/api/session",
    NOTEBOOK: "/ui/api/notebook",
    ARTIFACT: "/ui/api/artifact",
    EVENTS: "/ui/api/events",
    INTERRUPT: "/ui/api/interrupt",
    RESET: "/ui/api/reset",
    FORK: "/ui/api/fork",
    UNDO: "/ui/api/undo",
  }),
  events: Object.freeze({
    CALL_STARTED: "call_started",
    CALL_FINISHED: "call_finished",
    RESET: "reset",
    ACTION: "action",
    CELL_STARTED: "cell_started",
    STREAM: "stream",
    DISPLAY: "display",
    ERROR: "error",
    CELL_FINISHED: "cell_finished",
    NOTE: "note",
    WAITING: "waiting",
    LAGGED: "lagged",
    ENDED: "ended",
  }),
});
