//! One SQLite transaction for a Durable Object's writes. DO SQLite refuses `BEGIN`/`COMMIT`
//! statements and workers-rs 0.8 binds no `transactionSync`, so it is called through `js_sys`;
//! shared by the Colony and Facts objects.

use std::cell::Cell;

use worker::js_sys::{Function, Reflect};
use worker::wasm_bindgen::closure::ScopedClosure;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{Result, SqlStorage, SqlStorageValue};

/// Runs `statements` in one SQLite transaction: all of them, or (on the first error) none.
/// Returns the rows written.
pub fn run_in_transaction(
    storage: &worker::Storage,
    sql: &SqlStorage,
    statements: &[(&'static str, Vec<SqlStorageValue>)],
) -> Result<usize> {
    let rows = Cell::new(0usize);
    let mut body = || -> std::result::Result<JsValue, JsValue> {
        rows.set(0);
        for (query, bindings) in statements {
            let cursor = sql.exec(query, bindings.clone()).map_err(JsValue::from)?;
            rows.set(rows.get() + cursor.rows_written());
        }
        Ok(JsValue::UNDEFINED)
    };
    let raw: &JsValue = storage.as_raw();
    let transaction_sync = Reflect::get(raw, &JsValue::from_str("transactionSync"))?;
    match transaction_sync.dyn_ref::<Function>() {
        Some(f) => {
            // Called synchronously and not retained by the runtime, so a borrowed closure is
            // enough. A thrown error (our `Err`) rolls the transaction back and is rethrown.
            let closure = ScopedClosure::<dyn FnMut() -> std::result::Result<JsValue, JsValue>>::borrow_mut_aborting(&mut body);
            f.call1(raw, closure.as_ref())
                .map_err(worker::Error::from)?;
        }
        // A runtime without transactionSync: still one synchronous block, but no rollback.
        None => {
            body().map_err(worker::Error::from)?;
        }
    }
    Ok(rows.get())
}
