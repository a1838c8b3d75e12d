//! The one lock rule of the shared router.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The one lock rule of the shared router: a lock poisoned by a panic on another thread is
/// taken as it is, never a second panic. Every lock here guards a map or a value that is whole
/// after each statement (no invariant spans two of them), so what a panicking holder left is
/// still a state the router can go on from.
pub(crate) fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
