//! Serving an admission webhook from the test on 127.0.0.1: the API server reaches it through
//! `clientConfig.url` with a `caBundle` (the test CA).

use std::net::SocketAddr;

use axum::Router;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;

use crate::control_plane::ControlPlane;

/// A running test webhook server.
pub struct TestWebhook {
    /// `https://127.0.0.1:<port>`; append the handler path for `clientConfig.url`.
    pub base_url: String,
    /// PEM of the CA to put in `clientConfig.caBundle`.
    pub ca_bundle: Vec<u8>,
    handle: Handle<SocketAddr>,
}

impl TestWebhook {
    /// Serves `router` over TLS with a certificate for 127.0.0.1 signed by the control plane's
    /// CA. The server runs on the caller's tokio runtime.
    pub async fn serve(
        control_plane: &ControlPlane,
        router: Router,
    ) -> anyhow::Result<TestWebhook> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let cert = control_plane.serving_cert("airunway-e2e-webhook")?;
        let config =
            RustlsConfig::from_pem(cert.cert_pem.into_bytes(), cert.key_pem.into_bytes()).await?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let handle = Handle::new();
        let server = axum_server::from_tcp_rustls(listener, config)?.handle(handle.clone());
        tokio::spawn(async move {
            if let Err(e) = server.serve(router.into_make_service()).await {
                eprintln!("test webhook server stopped: {e}");
            }
        });
        Ok(TestWebhook {
            base_url: format!("https://127.0.0.1:{port}"),
            ca_bundle: control_plane.ca_pem().as_bytes().to_vec(),
            handle,
        })
    }
}

impl Drop for TestWebhook {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}
