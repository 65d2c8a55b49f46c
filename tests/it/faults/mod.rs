//! The fault catalogue: one test per way user code (or the world around it)
//! can hurt a kernel. Every case checks the same four promises:
//!
//! 1. the host answers: no hang (each call runs under a deadline) and no panic;
//! 2. output written before the fault is in the result;
//! 3. the next call on the same session works;
//! 4. no process is left: every kernel group seen is empty at the end.
//!
//! The README's "Reliability" section lists the cases and what each guarantees.

mod harness;

mod channel;
mod concurrency;
mod crash;
mod environment;
mod flood;
mod hang;
mod stdin;
