//! What a call's output becomes: bounded text for the model, the full
//! output on disk as an artifact, and displays turned into text, images,
//! JSON and status events.

pub mod artifacts;
pub mod display;
pub mod images;
pub mod limiter;
