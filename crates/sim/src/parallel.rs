//! Independent simulation runs on `jobs` threads (every sweep: seeds × policies or variants).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every task on `jobs` threads, results in task order.
pub fn map<T: Sync, R: Send>(tasks: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(tasks.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(tasks.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(task) = tasks.get(i) else { break };
                let r = f(task);
                results.lock().unwrap().push((i, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_back_in_task_order_whatever_the_thread_count() {
        let tasks: Vec<u64> = (0..50).collect();
        for jobs in [0, 1, 3, 64] {
            assert_eq!(
                super::map(&tasks, jobs, |t| t * t),
                tasks.iter().map(|t| t * t).collect::<Vec<_>>()
            );
        }
        assert!(super::map(&Vec::<u8>::new(), 2, |t| *t).is_empty());
    }
}
