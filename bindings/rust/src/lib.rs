//! Rust bindings of Sheaf (libsheaf.so.1). The safe API follows; [`sys`] is the raw C interface.

pub mod sys;
