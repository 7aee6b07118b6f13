use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

/// Readiness shared between the parts of a binary and its `/readyz`.
#[derive(Clone, Default)]
pub struct HealthState {
    ready: Arc<AtomicBool>,
}

impl HealthState {
    /// Marks the process ready (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether the process is ready.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

async fn bind(addr: SocketAddr) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    if addr.port() == 0 {
        return Ok(None);
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    Ok(Some(listener))
}

fn spawn(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: CancellationToken,
    what: &'static str,
) {
    tokio::spawn(async move {
        let result = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "{what} server failed");
        }
    });
}

/// Serves `/healthz` (always 200 while the process runs) and `/readyz` (200 once ready) on
/// `addr` until `shutdown`. Port 0 disables the server.
pub async fn serve_health(
    addr: SocketAddr,
    state: HealthState,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Some(listener) = bind(addr).await? else {
        return Ok(());
    };
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let state = state.clone();
                async move {
                    if state.is_ready() {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                    }
                }
            }),
        );
    spawn(listener, router, shutdown, "health");
    Ok(())
}

/// Serves the registry on `/metrics` (OpenMetrics text) on `addr` until `shutdown`. Port 0
/// disables the server.
pub async fn serve_metrics(
    addr: SocketAddr,
    registry: Arc<Registry>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Some(listener) = bind(addr).await? else {
        return Ok(());
    };
    let router = Router::new().route(
        "/metrics",
        get(move || {
            let registry = registry.clone();
            async move {
                let mut body = String::new();
                match prometheus_client::encoding::text::encode(&mut body, &registry) {
                    Ok(()) => (
                        StatusCode::OK,
                        [(
                            "content-type",
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        body,
                    ),
                    Err(e) => (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        [("content-type", "text/plain")],
                        e.to_string(),
                    ),
                }
            }
        }),
    );
    spawn(listener, router, shutdown, "metrics");
    Ok(())
}
