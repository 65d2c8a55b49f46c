//! Rendering calls for people at a terminal: cell cards for `cellbox run`,
//! the interactive view of `cellbox repl`, status one-liners, JSON trees and
//! images.

pub mod card;
pub mod images;
pub mod json_tree;
pub mod status;
pub mod style;

pub use card::{CardRenderer, RenderOptions, redrawing};
pub use style::Style;
