//! Why a route could not be added: errors shown to the user verbatim at startup.

use std::fmt;

/// Why a route could not be added. Both messages are meant to be shown to the
/// user verbatim at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// The pattern (or the method list or route index given with it) breaks a rule.
    InvalidPattern { pattern: String, reason: String },
    /// `new` has the same shape as `existing` and shares `methods` with it.
    Conflict {
        existing: String,
        new: String,
        methods: Vec<String>,
    },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidPattern { pattern, reason } => {
                write!(f, "invalid route pattern {pattern:?}: {reason}")
            }
            Self::Conflict {
                existing,
                new,
                methods,
            } => {
                let methods = methods.join(",");
                write!(
                    f,
                    "route conflict: {methods} {existing} overlaps {methods} {new}"
                )
            }
        }
    }
}

impl std::error::Error for RouteError {}
