//! The gRPC probe: `grpc.health.v1.Health` and `airunway.provider.v1.ProviderService`.

use std::net::SocketAddr;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::probe::v1::provider_service_server::{ProviderService, ProviderServiceServer};
use crate::probe::v1::{GetInfoRequest, GetInfoResponse};

struct Service {
    info: watch::Receiver<GetInfoResponse>,
}

#[tonic::async_trait]
impl ProviderService for Service {
    async fn get_info(
        &self,
        _request: Request<GetInfoRequest>,
    ) -> Result<Response<GetInfoResponse>, Status> {
        Ok(Response::new(self.info.borrow().clone()))
    }
}

/// Binds `address` and serves the probe until `shutdown`; the health status is SERVING until
/// shutdown starts.
pub async fn serve(
    address: SocketAddr,
    info: watch::Receiver<GetInfoResponse>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {address} for the probe: {e}"))?;
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<ProviderServiceServer<Service>>()
        .await;
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let server = tonic::transport::Server::builder()
        .add_service(health)
        .add_service(ProviderServiceServer::new(Service { info }))
        .serve_with_incoming_shutdown(incoming, async move {
            shutdown.cancelled().await;
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
