//! Leader election with a `coordination.k8s.io` Lease (kube-lease-manager): only the replica
//! holding the lease reports; a standby keeps its caches warm and takes over within the lease
//! duration once the leader stops renewing.

use std::time::Duration;

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseParams};
use tokio::sync::watch;

/// A channel that says whether this replica may report now.
pub struct Leadership {
    pub is_leader: watch::Receiver<bool>,
    task: Option<
        tokio::task::JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
    >,
    _always: Option<watch::Sender<bool>>,
}

impl Leadership {
    /// No election: this replica always reports.
    pub fn always() -> Self {
        let (tx, rx) = watch::channel(true);
        Leadership {
            is_leader: rx,
            task: None,
            _always: Some(tx),
        }
    }

    pub async fn elect(
        client: Client,
        namespace: &str,
        lease: &str,
        identity: &str,
        duration: Duration,
        grace: Duration,
    ) -> anyhow::Result<Self> {
        let params = LeaseParams::new(identity, duration.as_secs().max(2), grace.as_secs().max(1));
        let manager = LeaseManagerBuilder::new(client, lease)
            .with_namespace(namespace)
            .with_parameters(params)
            .build()
            .await?;
        let (rx, task) = manager.watch().await;
        Ok(Leadership {
            is_leader: rx,
            task: Some(task),
            _always: None,
        })
    }

    /// Gives the lease up (graceful shutdown) so that a standby takes over at once.
    pub async fn release(self) {
        let Leadership {
            is_leader,
            task,
            _always,
        } = self;
        drop(is_leader); // closing the channel ends the manager's task
        if let Some(task) = task {
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
