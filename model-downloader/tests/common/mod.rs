//! A real HTTP server that serves the Hugging Face Hub's file API (file list and file bytes)
//! from generated files, with fault injection, shared by the tests and the benchmark.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use sha2::{Digest as _, Sha256};

/// Size of one generated block; each block starts with its index, so blocks differ.
pub const BLOCK: u64 = 1 << 20;
/// The commit every listing reports.
pub const COMMIT: &str = "5f0c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b";

/// The content of a file: literal bytes or generated on the fly (never held whole in memory).
#[derive(Clone)]
pub enum Content {
    /// These bytes.
    Literal(Bytes),
    /// `size` bytes of the block pattern seeded by `seed`.
    Generated { size: u64, seed: u8 },
}

impl Content {
    /// The size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Self::Literal(b) => b.len() as u64,
            Self::Generated { size, .. } => *size,
        }
    }
}

/// One served file.
#[derive(Clone)]
pub struct ServedFile {
    /// The bytes.
    pub content: Content,
    /// Listed with `lfs.sha256` (and served through a redirect, as the Hub does).
    pub lfs: bool,
    /// Its sha256 (hex).
    pub sha256: String,
}

/// A fault for the next request of one file.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// Send this many bytes of the body, then never more (the client must be killed).
    StallAfter(u64),
    /// Send this many bytes of the body, then break the connection.
    ResetAfter(u64),
    /// Send the body with one byte changed.
    Corrupt,
    /// Answer with this status and no body.
    Status(u16),
}

/// One request for a file's bytes, as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The file.
    pub file: String,
    /// The first byte asked for (0 without a Range).
    pub start: u64,
    /// Whether the answer was 206.
    pub partial: bool,
}

/// The server's state.
#[derive(Default)]
pub struct Hub {
    /// Files of the model `org/model`, by path.
    pub files: BTreeMap<String, ServedFile>,
    /// Paths listed but answered 404.
    pub missing: Vec<String>,
    /// Paths listed as they are (hostile names), served nothing.
    pub hostile: Vec<String>,
    /// The bearer token required, if any.
    pub token: Option<String>,
    /// Answer 200 with the whole file even to a Range request.
    pub ignore_range: std::sync::atomic::AtomicBool,
    /// Faults for the next requests, by file (each used once, in order).
    pub faults: Mutex<HashMap<String, Vec<Fault>>>,
    /// Every request for bytes, in order.
    pub log: Mutex<Vec<Served>>,
    /// Body bytes sent, by file.
    pub sent: Mutex<HashMap<String, Arc<AtomicU64>>>,
    /// Listing requests.
    pub listings: AtomicU64,
    /// Repositories served beside `org/model`, each with the same files.
    pub also_serves: Vec<String>,
    block: Vec<u8>,
}

impl Hub {
    /// A hub serving `files` (path, content, LFS?).
    pub fn new(files: Vec<(&str, Content, bool)>) -> Self {
        let block = base_block();
        let mut hub = Self {
            block,
            ..Self::default()
        };
        for (path, content, lfs) in files {
            let sha256 = hub.sha256_of(&content);
            hub.files.insert(
                path.to_owned(),
                ServedFile {
                    content,
                    lfs,
                    sha256,
                },
            );
        }
        hub
    }

    /// Whether `repo` is one this hub serves.
    fn serves(&self, repo: &str) -> bool {
        repo == "org/model" || self.also_serves.iter().any(|r| r == repo)
    }

    /// The sha256 of a content.
    pub fn sha256_of(&self, content: &Content) -> String {
        let mut hasher = Sha256::new();
        match content {
            Content::Literal(b) => hasher.update(b),
            Content::Generated { size, seed } => {
                let mut offset = 0;
                while offset < *size {
                    let chunk = generate(&self.block, *seed, offset, (*size - offset).min(BLOCK));
                    hasher.update(&chunk);
                    offset += chunk.len() as u64;
                }
            }
        }
        format!("{:x}", hasher.finalize())
    }

    /// Adds a fault for the next request of `file`.
    pub fn fault(&self, file: &str, fault: Fault) {
        if let Ok(mut faults) = self.faults.lock() {
            faults.entry(file.to_owned()).or_default().push(fault);
        }
    }

    /// Body bytes sent for `file` so far.
    pub fn sent(&self, file: &str) -> u64 {
        self.sent
            .lock()
            .ok()
            .and_then(|m| m.get(file).map(|c| c.load(Ordering::SeqCst)))
            .unwrap_or(0)
    }

    /// The requests for `file`.
    pub fn requests(&self, file: &str) -> Vec<Served> {
        self.log
            .lock()
            .map(|l| l.iter().filter(|s| s.file == file).cloned().collect())
            .unwrap_or_default()
    }

    /// All requests for bytes.
    pub fn all_requests(&self) -> Vec<Served> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn counter(&self, file: &str) -> Arc<AtomicU64> {
        match self.sent.lock() {
            Ok(mut m) => m.entry(file.to_owned()).or_default().clone(),
            Err(_) => Arc::default(),
        }
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        match &self.token {
            None => true,
            Some(token) => headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v == format!("Bearer {token}")),
        }
    }
}

fn base_block() -> Vec<u8> {
    // A cheap deterministic pattern (xorshift), not compressible to nothing.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..BLOCK)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// `len` bytes of the generated content from `offset`, within one block.
fn generate(block: &[u8], seed: u8, offset: u64, len: u64) -> Bytes {
    let index = offset / BLOCK;
    let within = (offset % BLOCK) as usize;
    let len = (len as usize).min(BLOCK as usize - within);
    let mut out = block[within..within + len].to_vec();
    // The block's first 9 bytes: its index and the seed.
    let mut header = [0u8; 9];
    header[..8].copy_from_slice(&index.to_le_bytes());
    header[8] = seed;
    for (i, b) in header.iter().enumerate() {
        if i >= within && i < within + len {
            out[i - within] = *b;
        }
    }
    Bytes::from(out)
}

/// The bytes of a content from `start`, as a stream of chunks of at most one block.
fn body_stream(
    hub: Arc<Hub>,
    content: Content,
    start: u64,
    fault: Option<Fault>,
    counter: Arc<AtomicU64>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let size = content.size();
    futures::stream::unfold((start, 0u64, false), move |(offset, sent, done)| {
        let hub = hub.clone();
        let content = content.clone();
        let counter = counter.clone();
        async move {
            if done || offset >= size {
                return None;
            }
            let limit = match fault {
                Some(Fault::StallAfter(n)) | Some(Fault::ResetAfter(n)) => n,
                _ => u64::MAX,
            };
            if sent >= limit {
                match fault {
                    Some(Fault::StallAfter(_)) => futures::future::pending::<()>().await,
                    _ => {
                        return Some((
                            Err(std::io::Error::other("injected reset")),
                            (offset, sent, true),
                        ));
                    }
                }
            }
            let want = (size - offset).min(BLOCK).min(limit - sent).min(256 * 1024);
            let mut chunk = match &content {
                Content::Literal(b) => b.slice(offset as usize..(offset + want) as usize),
                Content::Generated { seed, .. } => generate(&hub.block, *seed, offset, want),
            };
            if matches!(fault, Some(Fault::Corrupt)) && offset == start {
                let mut v = chunk.to_vec();
                if let Some(b) = v.first_mut() {
                    *b ^= 0xff;
                }
                chunk = Bytes::from(v);
            }
            let n = chunk.len() as u64;
            counter.fetch_add(n, Ordering::SeqCst);
            Some((Ok(chunk), (offset + n, sent + n, false)))
        }
    })
}

async fn listing(
    State(hub): State<Arc<Hub>>,
    Path((org, name, _rev)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    hub.listings.fetch_add(1, Ordering::SeqCst);
    if !hub.authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, "Invalid credentials").into_response();
    }
    let repo = format!("{org}/{name}");
    if !hub.serves(&repo) {
        return (StatusCode::NOT_FOUND, "Repository not found").into_response();
    }
    let mut siblings: Vec<serde_json::Value> = hub
        .files
        .iter()
        .map(|(path, f)| {
            let size = f.content.size();
            if f.lfs {
                serde_json::json!({"rfilename": path, "blobId": "b", "size": size,
                    "lfs": {"sha256": f.sha256, "size": size, "pointerSize": 134}})
            } else {
                serde_json::json!({"rfilename": path, "blobId": "b", "size": size})
            }
        })
        .collect();
    for path in hub.missing.iter().chain(hub.hostile.iter()) {
        siblings.push(serde_json::json!({"rfilename": path, "blobId": "b", "size": 10}));
    }
    axum::Json(
        serde_json::json!({"id": repo, "modelId": repo, "sha": COMMIT, "siblings": siblings}),
    )
    .into_response()
}

async fn resolve(
    State(hub): State<Arc<Hub>>,
    Path((org, name, rev, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    if !hub.authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, "Invalid credentials").into_response();
    }
    if !hub.serves(&format!("{org}/{name}")) || rev != COMMIT {
        return (StatusCode::NOT_FOUND, "Revision not found").into_response();
    }
    match hub.files.get(&path) {
        // LFS files are redirected to a "CDN" path, as the Hub does.
        Some(f) if f.lfs => {
            let mut response = StatusCode::FOUND.into_response();
            if let Ok(v) = HeaderValue::from_str(&format!("/cdn/{path}")) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            response
        }
        Some(_) => serve(hub.clone(), &path, &headers),
        None => (StatusCode::NOT_FOUND, "Entry not found").into_response(),
    }
}

/// Custom-source files (`--uri`), behind the token when the hub has one.
async fn files(
    State(hub): State<Arc<Hub>>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !hub.authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, "Invalid credentials").into_response();
    }
    cdn(State(hub), Path(path), headers).await
}

async fn cdn(
    State(hub): State<Arc<Hub>>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    if hub.files.contains_key(&path) {
        serve(hub.clone(), &path, &headers)
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}

fn serve(hub: Arc<Hub>, path: &str, headers: &HeaderMap) -> Response {
    let Some(file) = hub.files.get(path).cloned() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let size = file.content.size();
    let requested = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes="))
        .and_then(|v| v.strip_suffix('-'))
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|_| !hub.ignore_range.load(Ordering::SeqCst));
    let fault = hub.faults.lock().ok().and_then(|mut f| {
        let list = f.get_mut(path)?;
        (!list.is_empty()).then(|| list.remove(0))
    });
    if let Some(Fault::Status(code)) = fault {
        if let Ok(mut log) = hub.log.lock() {
            log.push(Served {
                file: path.to_owned(),
                start: requested.unwrap_or(0),
                partial: false,
            });
        }
        return StatusCode::from_u16(code)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            .into_response();
    }
    if let Some(start) = requested
        && start >= size
    {
        if let Ok(mut log) = hub.log.lock() {
            log.push(Served {
                file: path.to_owned(),
                start,
                partial: false,
            });
        }
        let mut r = StatusCode::RANGE_NOT_SATISFIABLE.into_response();
        if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
            r.headers_mut().insert(header::CONTENT_RANGE, v);
        }
        return r;
    }
    let start = requested.unwrap_or(0);
    if let Ok(mut log) = hub.log.lock() {
        log.push(Served {
            file: path.to_owned(),
            start,
            partial: requested.is_some(),
        });
    }
    let counter = hub.counter(path);
    let body = Body::from_stream(body_stream(
        hub.clone(),
        file.content.clone(),
        start,
        fault,
        counter,
    ));
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(v) = HeaderValue::from_str(&(size - start).to_string()) {
        h.insert(header::CONTENT_LENGTH, v);
    }
    if requested.is_some() {
        if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", size - 1)) {
            h.insert(header::CONTENT_RANGE, v);
        }
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
    }
    response
}

/// A running server; stops when dropped.
pub struct Server {
    /// The state (files, faults, request log).
    pub hub: Arc<Hub>,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a server for `hub` on a free loopback port.
pub async fn start(hub: Hub) -> Server {
    let hub = Arc::new(hub);
    let app = Router::new()
        .route("/api/models/{org}/{name}/revision/{rev}", get(listing))
        .route("/{org}/{name}/resolve/{rev}/{*path}", get(resolve))
        .route("/cdn/{*path}", get(cdn))
        .route("/files/{*path}", get(files))
        .with_state(hub.clone());
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => panic!("bind: {e}"),
    };
    let addr: SocketAddr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => panic!("local_addr: {e}"),
    };
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Server {
        hub,
        endpoint: format!("http://{addr}"),
        task,
    }
}

/// The sha256 (hex) of a file on disk.
pub fn sha256_file(path: &std::path::Path) -> String {
    let mut file =
        std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    format!("{:x}", hasher.finalize())
}
