//! Asking the model server which model it serves: `GET http://<service>.<namespace>.svc:<port>/v1/models`,
//! bounded in time ([`super::model::DISCOVERY_TIMEOUT`]) and size
//! ([`super::model::DISCOVERY_MAX_BYTES`]). Used only when the spec names no model (see
//! [`super::model`]); any failure means "unknown".

use axum::body::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::model::{DISCOVERY_MAX_BYTES, DISCOVERY_TIMEOUT, first_model_id};

/// The in-cluster URL of a Service's `/v1/models`.
pub fn models_url(service: &str, namespace: &str, port: i32) -> String {
    format!("http://{service}.{namespace}.svc:{port}/v1/models")
}

/// The first model id `url` reports, or `None` (timeout, error, non-200, too large, not the
/// OpenAI shape).
pub async fn served_model(url: &str) -> Option<String> {
    served_model_within(url, DISCOVERY_TIMEOUT).await
}

/// [`served_model`] with another time bound.
pub async fn served_model_within(url: &str, timeout: std::time::Duration) -> Option<String> {
    let uri = url.parse().ok()?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let fetch = async {
        let response = client.get(uri).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = Limited::new(response.into_body(), DISCOVERY_MAX_BYTES)
            .collect()
            .await
            .ok()?
            .to_bytes();
        first_model_id(&body)
    };
    match tokio::time::timeout(timeout, fetch).await {
        Ok(found) => found,
        Err(_) => {
            tracing::debug!(%url, "model discovery timed out");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Serves one HTTP response with `body` (after `delay`) on a local port.
    async fn serve(body: Vec<u8>, delay: std::time::Duration) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            tokio::time::sleep(delay).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&body).await;
        });
        format!("http://{address}/v1/models")
    }

    #[tokio::test]
    async fn reads_the_first_model() {
        let url = serve(
            br#"{"object":"list","data":[{"id":"my-model"}]}"#.to_vec(),
            std::time::Duration::ZERO,
        )
        .await;
        assert_eq!(served_model(&url).await.as_deref(), Some("my-model"));
    }

    #[tokio::test]
    async fn too_large_answers_are_not_read() {
        let mut body = br#"{"data":[{"id":"m"}],"pad":""#.to_vec();
        body.extend(std::iter::repeat_n(b'x', DISCOVERY_MAX_BYTES));
        body.extend(br#""}"#);
        let url = serve(body, std::time::Duration::ZERO).await;
        assert_eq!(served_model(&url).await, None);
    }

    #[tokio::test]
    async fn a_slow_server_is_given_up_on() {
        let url = serve(
            br#"{"data":[{"id":"late"}]}"#.to_vec(),
            std::time::Duration::from_secs(5),
        )
        .await;
        let started = std::time::Instant::now();
        let bound = std::time::Duration::from_millis(200);
        assert_eq!(served_model_within(&url, bound).await, None);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[tokio::test]
    async fn nothing_listening_is_unknown() {
        assert_eq!(served_model("http://127.0.0.1:1/v1/models").await, None);
        assert_eq!(served_model("not a url").await, None);
        assert_eq!(
            models_url("qwen", "team-a", 8000),
            "http://qwen.team-a.svc:8000/v1/models"
        );
    }
}
