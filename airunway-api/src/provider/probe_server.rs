//! The gRPC probe: `grpc.health.v1.Health` and `airunway.provider.v1.ProviderService`.

use std::net::SocketAddr;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;

use crate::probe::v1::provider_service_server::{ProviderService, ProviderServiceServer};
use crate::probe::v1::{GetInfoRequest, GetInfoResponse, UpstreamHealth, upstream_health};
use crate::runtime::watch_health::Stalled;

struct Service {
    info: watch::Receiver<GetInfoResponse>,
    stalled: watch::Receiver<Option<Stalled>>,
}

/// The info `GetInfo` answers (pure): `info`, with the upstream health unhealthy and saying why
/// while the provider cannot make progress.
pub fn answer(info: &GetInfoResponse, stalled: Option<&Stalled>) -> GetInfoResponse {
    let mut answer = info.clone();
    if let Some(stalled) = stalled {
        answer.upstream_health = Some(UpstreamHealth {
            status: upstream_health::Status::Unhealthy as i32,
            reason: stalled.reason().to_string(),
            message: stalled.message(),
        });
    }
    answer
}

#[tonic::async_trait]
impl ProviderService for Service {
    async fn get_info(
        &self,
        _request: Request<GetInfoRequest>,
    ) -> Result<Response<GetInfoResponse>, Status> {
        let stalled = self.stalled.borrow().clone();
        Ok(Response::new(answer(&self.info.borrow(), stalled.as_ref())))
    }
}

/// Binds `address` and serves the probe until `shutdown`; the health status is SERVING until
/// shutdown starts, except while `stalled` says the provider cannot make progress
/// (NOT_SERVING then).
pub async fn serve(
    address: SocketAddr,
    info: watch::Receiver<GetInfoResponse>,
    stalled: watch::Receiver<Option<Stalled>>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {address} for the probe: {e}"))?;
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<ProviderServiceServer<Service>>()
        .await;
    {
        // Follow the verdict: NOT_SERVING while stalled, SERVING again when it clears.
        let (reporter, mut stalled, shutdown) =
            (reporter.clone(), stalled.clone(), shutdown.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    changed = stalled.changed() => if changed.is_err() { return },
                }
                let is_stalled = stalled.borrow_and_update().is_some();
                if shutdown.is_cancelled() {
                    return;
                }
                let status = if is_stalled {
                    ServingStatus::NotServing
                } else {
                    ServingStatus::Serving
                };
                // The server as a whole (`""`, what the core checks) and the provider service.
                reporter.set_service_status("", status).await;
                reporter
                    .set_service_status(
                        <ProviderServiceServer<Service> as tonic::server::NamedService>::NAME,
                        status,
                    )
                    .await;
            }
        });
    }
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let server = tonic::transport::Server::builder()
        .add_service(health)
        .add_service(ProviderServiceServer::new(Service { info, stalled }))
        .serve_with_incoming_shutdown(incoming, async move {
            shutdown.cancelled().await;
            reporter
                .set_service_status("", ServingStatus::NotServing)
                .await;
            reporter
                .set_not_serving::<ProviderServiceServer<Service>>()
                .await;
        });
    tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "probe server failed");
        }
    });
    tracing::info!(%address, "serving the provider probe");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_info_says_why_while_stalled() {
        let info = GetInfoResponse {
            name: "kaito".into(),
            upstream_health: Some(UpstreamHealth {
                status: upstream_health::Status::Healthy as i32,
                reason: "UpstreamCRDEstablished".into(),
                message: "ok".into(),
            }),
            ..Default::default()
        };
        assert_eq!(answer(&info, None), info);
        let stalled = Stalled::QueueStalled {
            since: "2026-01-01T00:00:00Z".parse().unwrap(),
        };
        let health = answer(&info, Some(&stalled)).upstream_health.unwrap();
        assert_eq!(health.status, upstream_health::Status::Unhealthy as i32);
        assert_eq!(health.reason, "QueueStalled");
        assert!(
            health
                .message
                .contains("waiting since 2026-01-01T00:00:00Z")
        );
    }
}
