//! A typed handler's query parameters, picked straight from the query string.
//!
//! `request.query` builds every pair and an index of them as Python objects; a
//! typed handler reads a few keys it knows at startup, so the core makes Python
//! strings for those values only (the typed GET's reason to exist: within a few
//! percent of a handler reading `request.query` by hand, issue 15).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::target::query_pairs;

/// The keys a typed handler reads from the query, each with the name of the
/// parameter it fills and whether it takes every value of a repeated key.
#[pyclass(module = "veter._core", frozen)]
pub struct QueryPick {
    keys: Vec<String>,
    names: Vec<Py<PyString>>,
    many: Vec<bool>,
}

#[pymethods]
impl QueryPick {
    /// `picks`: `(key, parameter name, many)` triples.
    #[new]
    fn new(py: Python<'_>, picks: Vec<(String, String, bool)>) -> Self {
        let mut pick = QueryPick {
            keys: Vec::with_capacity(picks.len()),
            names: Vec::with_capacity(picks.len()),
            many: Vec::with_capacity(picks.len()),
        };
        for (key, name, many) in picks {
            pick.keys.push(key);
            pick.names.push(PyString::intern(py, &name).unbind());
            pick.many.push(many);
        }
        pick
    }
}

impl QueryPick {
    /// Sets `into[name]` to the first value of each key in `query` (a list of every
    /// value for a `many` key); keys absent from the query are left out, as are
    /// values of keys nobody asked for (never made into Python objects).
    pub fn fill(&self, py: Python<'_>, query: &[u8], into: &Bound<'_, PyDict>) -> PyResult<()> {
        for (key, value) in query_pairs(query) {
            // A few keys: a scan beats hashing; two parameters may read one key.
            for (i, _) in self.keys.iter().enumerate().filter(|(_, k)| **k == key) {
                let name = self.names[i].bind(py);
                if self.many[i] {
                    match into.get_item(name)? {
                        Some(values) => values.cast::<PyList>()?.append(value.as_ref())?,
                        None => into.set_item(name, PyList::new(py, [value.as_ref()])?)?,
                    }
                } else if !into.contains(name)? {
                    into.set_item(name, value.as_ref())?;
                }
            }
        }
        Ok(())
    }
}
