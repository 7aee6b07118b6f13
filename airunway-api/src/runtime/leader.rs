use std::time::Duration;

use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Leader election failure.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The Lease could not be created or read.
    #[error("leader election Lease {namespace}/{name}: {source}")]
    Lease {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// Cause.
        #[source]
        source: LeaseManagerError,
    },
    /// Leadership was lost while running; the process must stop its controllers.
    #[error("lost leadership of Lease {0}")]
    Lost(String),
}

/// Lease-based leader election: [`LeaderElection::acquire`] waits until this process holds the
/// Lease; [`LeaderElection::lost`] resolves if it stops holding it.
pub struct LeaderElection {
    receiver: watch::Receiver<bool>,
    task: JoinHandle<Result<LeaseManager, LeaseManagerError>>,
    name: String,
}

/// How long a stopping process waits for the API server to take its release of the Lease.
pub const LEASE_RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

impl LeaderElection {
    /// Starts competing for Lease `namespace/name` as `identity`. The Lease is renewed
    /// `duration / 3` before it expires.
    pub async fn start(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        duration: Duration,
    ) -> Result<LeaderElection, LeaderError> {
        let seconds = duration.as_secs().max(3);
        let manager = LeaseManagerBuilder::new(client, name)
            .with_namespace(namespace)
            .with_identity(identity)
            .with_duration(seconds)
            .with_grace((seconds / 3).max(1))
            .with_field_manager(format!("{name}-leader-election"))
            .build()
            .await
            .map_err(|source| LeaderError::Lease {
                namespace: namespace.to_string(),
                name: name.to_string(),
                source,
            })?;
        let (receiver, task) = manager.watch().await;
        Ok(LeaderElection {
            receiver,
            task,
            name: format!("{namespace}/{name}"),
        })
    }

    /// Waits until this process is the leader (or `shutdown`). Returns false on shutdown.
    pub async fn acquire(&mut self, shutdown: &CancellationToken) -> bool {
        loop {
            if *self.receiver.borrow_and_update() {
                tracing::info!(lease = %self.name, "acquired leadership");
                return true;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return false,
                changed = self.receiver.changed() => if changed.is_err() { return false },
            }
        }
    }

    /// Gives the Lease up (a stopping process), so a replacement leads at once instead of
    /// waiting out the Lease duration; waits at most [`LEASE_RELEASE_TIMEOUT`] for the API
    /// server. Closing the channel makes the manager's task release the Lease and end.
    pub async fn release(self) {
        let LeaderElection {
            receiver,
            task,
            name,
        } = self;
        drop(receiver);
        match tokio::time::timeout(LEASE_RELEASE_TIMEOUT, task).await {
            Ok(Ok(Ok(_))) => tracing::info!(lease = %name, "released leadership"),
            Ok(Ok(Err(error))) => {
                tracing::warn!(lease = %name, %error, "could not release the Lease; a replacement waits for it to expire")
            }
            Ok(Err(error)) => {
                tracing::warn!(lease = %name, %error, "the Lease task failed; a replacement waits for the Lease to expire")
            }
            Err(_) => {
                tracing::warn!(lease = %name, timeout = ?LEASE_RELEASE_TIMEOUT, "the Lease was not released in time; a replacement waits for it to expire")
            }
        }
    }

    /// Resolves when leadership is lost (the caller should stop its controllers and exit).
    pub async fn lost(&mut self) -> LeaderError {
        loop {
            if !*self.receiver.borrow_and_update() {
                return LeaderError::Lost(self.name.clone());
            }
            if self.receiver.changed().await.is_err() {
                return LeaderError::Lost(self.name.clone());
            }
        }
    }
}

/// A process identity for leader election: `POD_NAME` (or the host name) plus the process id.
pub fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "airunway".to_string());
    format!("{host}-{}", std::process::id())
}
