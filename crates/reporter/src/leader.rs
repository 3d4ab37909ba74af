//! Leader election with a `coordination.k8s.io` Lease (kube-lease-manager): only the replica
//! holding the lease reports; a standby keeps its caches warm and takes over within the lease
//! duration once the leader stops renewing.
//!
//! A renew deadline guards against two leaders (client-go's `RenewDeadline`): kube-lease-manager
//! logs renew errors and keeps saying "leader" while it retries, so a leader cut off from the API
//! server would keep pushing its frozen cache while the standby takes the expired lease. Here the
//! replica checks the Lease itself (a GET every second or so) and leads only while the Lease
//! names it with a `renewTime` less than `--renew-deadline` old: it steps down — and every loop
//! stops sending — before the lease expires for the standby (deadline < lease duration).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseParams};
use tokio::sync::watch;

/// Whether this replica may lead now: the lease manager holds the lease, and the Lease was last
/// confirmed (renewed, as read back from the API server) within the renew deadline.
pub fn may_lead(
    manager_holds: bool,
    confirmed_ms: Option<u64>,
    now_ms: u64,
    deadline_ms: u64,
) -> bool {
    manager_holds && confirmed_ms.is_some_and(|t| now_ms.saturating_sub(t) <= deadline_ms)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Election settings.
#[derive(Debug, Clone)]
pub struct Election {
    pub namespace: String,
    pub lease: String,
    pub identity: String,
    pub duration: Duration,
    pub grace: Duration,
    pub renew_deadline: Duration,
}

/// A channel that says whether this replica may report now.
pub struct Leadership {
    pub is_leader: watch::Receiver<bool>,
    manager: Option<
        tokio::task::JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
    >,
    guard: Option<tokio::task::JoinHandle<()>>,
    _always: Option<watch::Sender<bool>>,
}

impl Leadership {
    /// No election: this replica always reports.
    pub fn always() -> Self {
        let (tx, rx) = watch::channel(true);
        Leadership {
            is_leader: rx,
            manager: None,
            guard: None,
            _always: Some(tx),
        }
    }

    pub async fn elect(client: Client, e: Election) -> anyhow::Result<Self> {
        let params = LeaseParams::new(
            e.identity.clone(),
            e.duration.as_secs().max(2),
            e.grace.as_secs().max(1),
        );
        let manager = LeaseManagerBuilder::new(client.clone(), &e.lease)
            .with_namespace(&e.namespace)
            .with_parameters(params)
            .build()
            .await?;
        let (mut holds, manager) = manager.watch().await;
        let (tx, rx) = watch::channel(false);
        let api: Api<Lease> = Api::namespaced(client, &e.namespace);
        let deadline_ms = e.renew_deadline.as_millis() as u64;
        let every =
            (e.renew_deadline / 4).clamp(Duration::from_millis(200), Duration::from_secs(1));
        let guard = tokio::spawn(async move {
            let mut confirmed: Option<u64> = None;
            loop {
                let manager_holds = *holds.borrow_and_update();
                if manager_holds {
                    match tokio::time::timeout(every, api.get_opt(&e.lease)).await {
                        Ok(Ok(Some(lease))) => {
                            let spec = lease.spec.unwrap_or_default();
                            let ours = spec.holder_identity.as_deref() == Some(e.identity.as_str());
                            let renewed =
                                spec.renew_time.map(|t| t.0.as_millisecond().max(0) as u64);
                            if ours {
                                confirmed = confirmed.max(renewed);
                            }
                        }
                        Ok(Ok(None)) => {}
                        Ok(Err(err)) => tracing::warn!(error = %err, "reading the Lease failed"),
                        Err(_) => tracing::warn!("reading the Lease timed out"),
                    }
                } else {
                    confirmed = None;
                }
                let leading = may_lead(manager_holds, confirmed, now_ms(), deadline_ms);
                let changed = tx.send_if_modified(|v| {
                    let changed = *v != leading;
                    *v = leading;
                    changed
                });
                if changed && !leading && manager_holds {
                    tracing::error!(
                        renew_deadline = ?Duration::from_millis(deadline_ms),
                        "the Lease was not renewed within the renew deadline: stepping down"
                    );
                }
                tokio::select! {
                    r = holds.changed() => if r.is_err() { break },
                    _ = tokio::time::sleep(every) => {}
                    _ = tx.closed() => break,
                }
            }
        });
        Ok(Leadership {
            is_leader: rx,
            manager: Some(manager),
            guard: Some(guard),
            _always: None,
        })
    }

    /// Gives the lease up (graceful shutdown) so that a standby takes over at once.
    pub async fn release(self) {
        let Leadership {
            is_leader,
            manager,
            guard,
            _always,
        } = self;
        drop(is_leader);
        // The guard holds the manager's only receiver: stopping it closes the channel, which
        // ends the manager's task.
        if let Some(guard) = guard {
            guard.abort();
            let _ = guard.await;
        }
        if let Some(task) = manager {
            match tokio::time::timeout(Duration::from_secs(5), task).await {
                Ok(Ok(Ok(manager))) => {
                    if let Err(e) = manager.release().await {
                        tracing::warn!(error = %e, "releasing the lease failed");
                    }
                }
                Ok(Ok(Err(e))) => tracing::warn!(error = %e, "lease manager ended with an error"),
                Ok(Err(e)) => tracing::warn!(error = %e, "lease manager task failed"),
                Err(_) => tracing::warn!("lease manager did not stop within 5 s"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::may_lead;

    #[test]
    fn a_leader_steps_down_once_its_lease_is_older_than_the_renew_deadline() {
        assert!(may_lead(true, Some(1_000), 5_000, 10_000));
        assert!(may_lead(true, Some(1_000), 11_000, 10_000));
        assert!(
            !may_lead(true, Some(1_000), 11_001, 10_000),
            "cut off: step down"
        );
        assert!(!may_lead(true, None, 1_000, 10_000), "never confirmed");
        assert!(
            !may_lead(false, Some(1_000), 1_000, 10_000),
            "the manager lost it"
        );
    }
}
