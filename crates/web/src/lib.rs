//! The kafkascope web app (Yew).
//!
//! The app renders *view models*: plain structs computed from engine answers
//! by ordinary Rust functions (see [`view_model`]). Components only lay those
//! out and turn clicks and keystrokes into inputs, so everything the page
//! shows can be tested natively, without a browser.

pub mod app;
pub mod cluster_model;
pub mod cluster_panel;
pub mod course;
pub mod course_model;
pub mod crash;
pub mod exercise_model;
pub mod export;
pub mod host_api;
pub mod inspector;
pub mod jepsen_model;
pub mod knob;
pub mod knobs_form;
pub mod lesson;
pub mod lesson_model;
pub mod map;
pub mod map_actions;
pub mod map_model;
pub mod map_tools;
#[cfg(test)]
mod numbers_agree;
pub mod page_view;
pub mod run_toolbar;
pub mod sandbox;
pub mod sandbox_model;
pub mod selection;
pub mod sequence;
pub mod sequence_model;
pub mod session;
pub mod share;
pub mod sim_slot;
pub mod step_parts;
pub mod story_cursor;
pub mod story_loader;
pub mod story_timeline;
pub mod story_view;
pub mod tabs;
pub mod view_model;
pub mod voice;
