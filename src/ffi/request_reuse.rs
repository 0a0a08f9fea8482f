//! A request object used again for the next request on its connection, when nothing
//! but the connection holds it: its allocation, and moving a ~400-byte value in
//! through `PyO3`'s initializer and free list, cost ~250 instructions per request
//! (callgrind, docs/design.md). Unobservable by construction: only an object whose
//! one reference is the connection's is refilled, so no handler, task or log line
//! can see it change.

use pyo3::ffi;
use pyo3::prelude::*;

use crate::request::Request;

/// `spare` given to `renew` with `value` as `&mut Request`, when the reference
/// passed in is its only one; else `Err(value)` (and `spare` is only let go of).
/// `renew` writes the next request's fields into the object where it is, rather
/// than a whole new value being built and moved in. `spare` is taken by value, so
/// `renew` cannot also reach the object through a `Bound`.
pub fn renew<V>(
    spare: Bound<'_, Request>,
    value: V,
    renew: impl FnOnce(&mut Request, V),
) -> Result<Bound<'_, Request>, V> {
    if !sole_reference(&spare) {
        return Err(value);
    }
    // The struct's place inside the object, as an offset from the object's start:
    // the pointer written through below is derived from the object's own pointer
    // (the allocation's), not from a shared reference.
    let offset = std::ptr::from_ref::<Request>(spare.get()) as usize - spare.as_ptr() as usize;
    // SAFETY: `spare` is a live `Request` object (exactly that class: it has no
    // subclasses) and the reference this function holds is its only one (count
    // 1, checked above with the GIL held): no other `Py`, `Bound` or `&Request`
    // to it exists, it is not tracked by the collector and takes no weak
    // references, so nothing, not even Python code that a drop inside `renew`
    // runs, can reach it while `renew` holds the `&mut`. `PyO3` keeps the value
    // in an `UnsafeCell` within the object, at `offset`, initialized.
    let request = unsafe { &mut *spare.as_ptr().cast::<Request>().byte_add(offset) };
    renew(request, value);
    Ok(spare)
}

/// Whether the caller's reference to `obj` is its only one.
pub fn sole_reference(obj: &Bound<'_, Request>) -> bool {
    // SAFETY: `obj` is a live object (its `Bound` holds a reference, with the GIL)
    // for the call, which only reads its reference count.
    unsafe { ffi::Py_REFCNT(obj.as_ptr()) == 1 }
}
