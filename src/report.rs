//! Tables and JSON.
