//! Fetching files: one HTTP client, resumable transfers into `<file>.part` (HTTP `Range` from its
//! length), size and sha256 verification, bounded retries with backoff on transient errors.

use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_RANGE, RANGE};
use sha2::{Digest as _, Sha256};
use tracing::{debug, info, warn};

use crate::error::Error;
use crate::hub::{FileEntry, MAX_LISTING_BYTES};
use crate::paths::PART_SUFFIX;
use crate::progress::Progress;

/// Read buffer for hashing a file on disk.
const READ_BUFFER: usize = 1 << 20;
/// Bytes received before they are handed to the writer thread as one batch (one wake-up and one
/// vectored write per batch instead of one per network chunk).
const WRITE_BATCH: usize = 1 << 20;
/// Batches in flight between the network and the writer thread.
const CHANNEL_BATCHES: usize = 8;

/// The access token (from `HF_TOKEN`); its `Debug` never shows it.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Wraps a token; `None` when empty.
    pub fn new(value: String) -> Option<Self> {
        let trimmed = value.trim();
        (!trimmed.is_empty()).then(|| Self(trimmed.to_owned()))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// How often and how patiently a transient failure is retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in a row without progress before giving up (at least 1).
    pub attempts: u32,
    /// Delay before the first retry; doubled each time.
    pub base_delay: Duration,
    /// Longest delay.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    fn delay(&self, attempt: u32) -> Duration {
        self.base_delay
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_delay)
    }
}

/// Network settings of the client.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Time to open a connection.
    pub connect: Duration,
    /// Longest wait for the next bytes of an answer (a stalled transfer is retried).
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(30),
            read: Duration::from_secs(60),
        }
    }
}

/// Downloads files with one shared client and progress counters.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    token: Option<Token>,
    token_withheld: bool,
    subject: String,
    progress: Arc<Progress>,
    retry: RetryPolicy,
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It was already present and verified.
    Present,
    /// It was fetched (in part or whole) and verified.
    Fetched,
}

/// Per-file bookkeeping of what the progress counters hold for it.
#[derive(Debug, Default)]
struct FileState {
    /// Bytes of this file counted in `bytes_done`.
    counted: u64,
    /// The expected size (from the listing or learned from the server).
    expected: Option<u64>,
}

impl Fetcher {
    /// A fetcher for `subject` (the model id or URI, named in authorization errors).
    pub fn new(
        subject: String,
        token: Option<Token>,
        progress: Arc<Progress>,
        retry: RetryPolicy,
        timeouts: Timeouts,
    ) -> Result<Self, Error> {
        // reqwest is built without a crypto provider of its own: ring, as in the rest of the
        // workspace (a no-op when the process installed one already).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .user_agent(concat!(
                "airunway-model-downloader/",
                env!("CARGO_PKG_VERSION")
            ))
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.read)
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()
            .map_err(|source| Error::transport("HTTP client setup", source))?;
        Ok(Self {
            client,
            token,
            token_withheld: false,
            subject,
            progress,
            retry,
        })
    }

    /// Records that a token was set but is not sent (named in a 401/403 error).
    pub fn token_withheld(mut self, withheld: bool) -> Self {
        self.token_withheld = withheld;
        self
    }

    fn get(&self, url: reqwest::Url) -> reqwest::RequestBuilder {
        let request = self.client.get(url);
        match &self.token {
            // Marked sensitive by reqwest: not logged, dropped on a redirect to another host.
            Some(Token(token)) => request.bearer_auth(token),
            None => request,
        }
    }

    fn refuse(&self, status: StatusCode, what: &str) -> Error {
        match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Error::Unauthorized {
                model: self.subject.clone(),
                status: status.as_u16(),
                token_given: self.token.is_some(),
                token_withheld: self.token_withheld,
            },
            StatusCode::NOT_FOUND => Error::NotFound {
                what: what.to_owned(),
            },
            _ => Error::HttpStatus {
                what: what.to_owned(),
                status: status.as_u16(),
            },
        }
    }

    /// Runs `op` until it succeeds, fails for good, or fails transiently `attempts` times in a
    /// row without `moved` (the bytes it received) growing.
    async fn with_retries<T, F>(&self, what: &str, moved: &AtomicU64, mut op: F) -> Result<T, Error>
    where
        F: AsyncFnMut() -> Result<T, Error>,
    {
        let mut attempt = 0;
        loop {
            let moved_before = moved.load(Ordering::Relaxed);
            match op().await {
                Ok(value) => return Ok(value),
                Err(e) if e.is_transient() => {
                    // An attempt that moved the transfer forward starts the count again: a
                    // connection that breaks every few gigabytes still finishes the file.
                    if moved.load(Ordering::Relaxed) > moved_before {
                        attempt = 0;
                    }
                    attempt += 1;
                    if attempt >= self.retry.attempts.max(1) {
                        return Err(e);
                    }
                    let delay = self.retry.delay(attempt - 1);
                    warn!(what, error = %e, attempt, delay_ms = delay.as_millis() as u64, "transient error, retrying");
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The bytes of a small JSON document (the file list), at most [`MAX_LISTING_BYTES`].
    pub async fn get_document(&self, url: &reqwest::Url, what: &str) -> Result<Vec<u8>, Error> {
        self.with_retries(what, &AtomicU64::new(0), async || {
            let mut response = self
                .get(url.clone())
                .send()
                .await
                .map_err(|source| Error::transport(what.to_owned(), source))?;
            if !response.status().is_success() {
                return Err(self.refuse(response.status(), what));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|source| Error::transport(what.to_owned(), source))?
            {
                if body.len() + chunk.len() > MAX_LISTING_BYTES {
                    return Err(Error::Protocol {
                        what: what.to_owned(),
                        reason: "larger than 32 MiB".into(),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        })
        .await
    }

    /// Makes `entry` present and verified at `<dir>/<entry.path>`: skipped when already there
    /// with the right size and hash, else fetched into `<file>.part` (resumed from its length),
    /// verified, and renamed into place. A wrong hash deletes the file and fetches it once more.
    pub async fn fetch(&self, entry: &FileEntry, dir: &Path) -> Result<Outcome, Error> {
        let dest = dir.join(&entry.path);
        let part = part_path(&dest);
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| Error::io("create directory", parent, e))?;
        }
        let mut state = FileState {
            expected: entry.size,
            ..FileState::default()
        };
        // Bytes this file received in this run: a retry that moved it forward resets the count.
        let moved = AtomicU64::new(0);

        match tokio::fs::symlink_metadata(&dest).await {
            Ok(meta) if !meta.is_file() => {
                return Err(Error::UnsafePath {
                    path: entry.path.clone(),
                    reason: "exists and is not a regular file",
                });
            }
            Ok(meta) => match (entry.size, &entry.sha256) {
                (Some(size), _) if meta.len() != size => {
                    warn!(file = %entry.path, expected = size, actual = meta.len(), "present with the wrong size, fetching again");
                    remove(&dest).await?;
                }
                (_, Some(expected)) => {
                    let actual = hash_file(dest.clone()).await?;
                    if &actual == expected {
                        return self.present(entry, meta.len(), &mut state);
                    }
                    warn!(file = %entry.path, %expected, %actual, "present with the wrong sha256, fetching again");
                    remove(&dest).await?;
                }
                (Some(_), None) => return self.present(entry, meta.len(), &mut state),
                // Size unknown (a URI): check it against the server by resuming it.
                (None, None) => {
                    tokio::fs::rename(&dest, &part)
                        .await
                        .map_err(|e| Error::io("rename", &dest, e))?;
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("inspect", &dest, e)),
        }

        for round in 0..2 {
            let (len, actual) = self
                .with_retries(&entry.path, &moved, async || {
                    self.transfer(entry, &part, &mut state, &moved).await
                })
                .await?;
            if let (Some(expected), Some(actual)) = (&entry.sha256, actual)
                && expected != &actual
            {
                remove(&part).await?;
                self.progress.discard(state.counted);
                state.counted = 0;
                if round == 0 {
                    warn!(file = %entry.path, %expected, %actual, "sha256 mismatch, deleting and fetching again");
                    continue;
                }
                return Err(Error::HashMismatch {
                    file: entry.path.clone(),
                    expected: expected.clone(),
                    actual,
                });
            }
            tokio::fs::rename(&part, &dest)
                .await
                .map_err(|e| Error::io("rename", &part, e))?;
            self.progress.file_done();
            info!(file = %entry.path, bytes = len, "file complete");
            return Ok(Outcome::Fetched);
        }
        Err(Error::Protocol {
            what: entry.path.clone(),
            reason: "verification loop ended".into(),
        })
    }

    fn present(
        &self,
        entry: &FileEntry,
        len: u64,
        state: &mut FileState,
    ) -> Result<Outcome, Error> {
        if entry.size.is_none() {
            self.progress.add_total_bytes(len);
        }
        self.settle(state, len);
        self.progress.file_done();
        debug!(file = %entry.path, bytes = len, "already present and verified");
        Ok(Outcome::Present)
    }

    /// Makes the progress counters hold `on_disk` bytes for this file.
    fn settle(&self, state: &mut FileState, on_disk: u64) {
        if on_disk > state.counted {
            self.progress.add_existing(on_disk - state.counted);
        } else {
            self.progress.discard(state.counted - on_disk);
        }
        state.counted = on_disk;
    }

    /// Records a size the server gave for a file the listing has no size for.
    fn learn_size(&self, state: &mut FileState, size: u64) {
        if state.expected.is_none() {
            state.expected = Some(size);
            self.progress.add_total_bytes(size);
        }
    }

    /// One attempt: request the bytes from the `.part` file's length on, append them, and return
    /// the complete file's length and (for files with a listed hash) its sha256.
    async fn transfer(
        &self,
        entry: &FileEntry,
        part: &Path,
        state: &mut FileState,
        moved: &AtomicU64,
    ) -> Result<(u64, Option<String>), Error> {
        let what = || format!("file {} of {}", entry.path, self.subject);
        let mut offset = match tokio::fs::metadata(part).await {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(Error::io("inspect", part, e)),
        };
        if state.expected.is_some_and(|size| offset > size) {
            remove(part).await?;
            offset = 0;
        }
        self.settle(state, offset);
        let hash = entry.sha256.is_some();
        if offset > 0 && state.expected == Some(offset) {
            // Complete but not yet renamed (stopped between the two).
            let actual = if hash {
                Some(hash_file(part.to_path_buf()).await?)
            } else {
                None
            };
            return Ok((offset, actual));
        }

        let mut restarted = false;
        let response = loop {
            let mut request = self.get(entry.url.clone());
            if offset > 0 {
                request = request.header(RANGE, format!("bytes={offset}-"));
            }
            let response = request
                .send()
                .await
                .map_err(|source| Error::transport(what(), source))?;
            let status = response.status();
            match status {
                StatusCode::PARTIAL_CONTENT if offset > 0 => {
                    match parse_content_range(response.headers().get(CONTENT_RANGE)) {
                        Some((start, total)) if start == offset => {
                            if let Some(total) = total {
                                if state.expected.is_some_and(|size| size != total) {
                                    return Err(Error::Protocol {
                                        what: what(),
                                        reason: format!(
                                            "server says {total} bytes, the listing {:?}",
                                            state.expected
                                        ),
                                    });
                                }
                                self.learn_size(state, total);
                            }
                            break response;
                        }
                        _ if !restarted => {
                            warn!(file = %entry.path, "unexpected Content-Range, restarting the file");
                        }
                        _ => {
                            return Err(Error::Protocol {
                                what: what(),
                                reason: "unusable Content-Range".into(),
                            });
                        }
                    }
                }
                StatusCode::OK => {
                    if offset > 0 {
                        info!(file = %entry.path, offset, "server ignored the range, restarting the file");
                        offset = 0;
                        self.settle(state, 0);
                    }
                    if let Some(len) = response.content_length() {
                        if let Some(size) = state.expected
                            && size != len
                        {
                            return Err(Error::Protocol {
                                what: what(),
                                reason: format!(
                                    "server sends {len} bytes, the listing says {size}"
                                ),
                            });
                        }
                        self.learn_size(state, len);
                    }
                    break response;
                }
                StatusCode::RANGE_NOT_SATISFIABLE if offset > 0 && !restarted => {
                    let total = parse_content_range(response.headers().get(CONTENT_RANGE))
                        .and_then(|(_, t)| t);
                    if total == Some(offset) || (state.expected.is_none() && total.is_none()) {
                        self.learn_size(state, offset);
                        let actual = if hash {
                            Some(hash_file(part.to_path_buf()).await?)
                        } else {
                            None
                        };
                        return Ok((offset, actual));
                    }
                    warn!(file = %entry.path, offset, "range not satisfiable, restarting the file");
                }
                s if s.is_success() => {
                    return Err(Error::Protocol {
                        what: what(),
                        reason: format!("unexpected HTTP {}", s.as_u16()),
                    });
                }
                s => return Err(self.refuse(s, &what())),
            }
            // Restart the file from zero.
            remove(part).await?;
            offset = 0;
            self.settle(state, 0);
            restarted = true;
        };

        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<bytes::Bytes>>(CHANNEL_BATCHES);
        let writer_path = part.to_path_buf();
        let writer =
            tokio::task::spawn_blocking(move || -> Result<(u64, Option<Sha256>), Error> {
                let io = |op, e| Error::io(op, &writer_path, e);
                let mut file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&writer_path)
                    .map_err(|e| io("open", e))?;
                let mut hasher = hash.then(Sha256::new);
                file.set_len(offset).map_err(|e| io("truncate", e))?;
                if let Some(hasher) = hasher.as_mut() {
                    hash_reader(&mut (&file).take(offset), hasher).map_err(|e| io("read", e))?;
                }
                file.seek(std::io::SeekFrom::Start(offset))
                    .map_err(|e| io("seek", e))?;
                let mut len = offset;
                while let Some(batch) = rx.blocking_recv() {
                    if let Some(hasher) = hasher.as_mut() {
                        batch.iter().for_each(|chunk| hasher.update(chunk));
                    }
                    write_batch(&mut file, &batch).map_err(|e| io("write", e))?;
                    len += batch.iter().map(|c| c.len() as u64).sum::<u64>();
                }
                // The bytes reach the disk before the file is renamed into place as complete.
                file.sync_data().map_err(|e| io("sync", e))?;
                Ok((len, hasher))
            });

        let mut response = response;
        let mut received = offset;
        let mut batch = Vec::new();
        let mut batched = 0;
        let streamed: Result<(), Error> = loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let n = chunk.len() as u64;
                    if state.expected.is_some_and(|size| received + n > size) {
                        break Err(Error::Protocol {
                            what: what(),
                            reason: "more bytes than the file's size".into(),
                        });
                    }
                    batched += chunk.len();
                    batch.push(chunk);
                    if batched >= WRITE_BATCH {
                        batched = 0;
                        if tx.send(std::mem::take(&mut batch)).await.is_err() {
                            // The writer stopped: its error is returned below.
                            break Ok(());
                        }
                    }
                    received += n;
                    state.counted += n;
                    self.progress.add_fetched(n);
                    moved.fetch_add(n, Ordering::Relaxed);
                }
                Ok(None) => break Ok(()),
                Err(source) => break Err(Error::transport(what(), source)),
            }
        };
        // What was received is kept (and resumed from) even when the transfer broke.
        if !batch.is_empty() {
            let _ = tx.send(batch).await;
        }
        drop(tx);
        let (len, hasher) = writer
            .await
            .map_err(|e| Error::io("write", part, std::io::Error::other(e.to_string())))??;
        if let Err(e) = streamed {
            if matches!(e, Error::Protocol { .. }) {
                remove(part).await?;
                self.settle(state, 0);
            }
            return Err(e);
        }
        if let Some(size) = state.expected
            && len != size
        {
            return Err(Error::SizeMismatch {
                file: entry.path.clone(),
                expected: size,
                actual: len,
            });
        }
        Ok((len, hasher.map(|h| format!("{:x}", h.finalize()))))
    }
}

/// `<dest>.part`.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.as_os_str().to_owned();
    name.push(PART_SUFFIX);
    PathBuf::from(name)
}

async fn remove(path: &Path) -> Result<(), Error> {
    match tokio::fs::remove_file(path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", path, e)),
    }
}

/// Writes every chunk of `batch`, with as few (vectored) system calls as the kernel allows.
fn write_batch(file: &mut std::fs::File, batch: &[bytes::Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<std::io::IoSlice<'_>> =
        batch.iter().map(|c| std::io::IoSlice::new(c)).collect();
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        let n = file.write_vectored(slices)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        std::io::IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

fn hash_reader(reader: &mut impl std::io::Read, hasher: &mut Sha256) -> std::io::Result<()> {
    let mut buffer = vec![0u8; READ_BUFFER];
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buffer[..n]);
    }
}

/// The sha256 (lowercase hex) of a file, computed off the async threads.
pub async fn hash_file(path: PathBuf) -> Result<String, Error> {
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&path).map_err(|e| Error::io("open", &path, e))?;
        let mut hasher = Sha256::new();
        hash_reader(&mut file, &mut hasher).map_err(|e| Error::io("read", &path, e))?;
        Ok(format!("{:x}", hasher.finalize()))
    })
    .await
    .map_err(|e| Error::io("hash", "file", std::io::Error::other(e.to_string())))?
}

/// `bytes <start>-<end>/<total>` (total `*` when unknown) to `(start, total)`; for a 416 answer,
/// `bytes */<total>` gives `(0, total)`.
fn parse_content_range(value: Option<&reqwest::header::HeaderValue>) -> Option<(u64, Option<u64>)> {
    let rest = value?.to_str().ok()?.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let total = if total == "*" {
        None
    } else {
        Some(total.parse().ok()?)
    };
    if range == "*" {
        return Some((0, total));
    }
    let (start, end) = range.split_once('-')?;
    let start: u64 = start.parse().ok()?;
    let end: u64 = end.parse().ok()?;
    (end >= start && total.is_none_or(|t| end < t)).then_some((start, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn content_ranges() {
        let h = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(
            parse_content_range(Some(&h("bytes 100-199/200"))),
            Some((100, Some(200)))
        );
        assert_eq!(
            parse_content_range(Some(&h("bytes 5-9/*"))),
            Some((5, None))
        );
        assert_eq!(
            parse_content_range(Some(&h("bytes */300"))),
            Some((0, Some(300)))
        );
        assert_eq!(parse_content_range(Some(&h("bytes 100-250/200"))), None);
        assert_eq!(parse_content_range(Some(&h("items 1-2/3"))), None);
        assert_eq!(parse_content_range(None), None);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        assert_eq!(p.delay(0), Duration::from_millis(100));
        assert_eq!(p.delay(2), Duration::from_millis(400));
        assert_eq!(p.delay(3), Duration::from_millis(500));
        assert_eq!(p.delay(40), Duration::from_millis(500));
    }

    #[test]
    fn token_is_not_shown() {
        let t = Token::new("hf_secret".into());
        assert_eq!(format!("{t:?}"), "Some(Token(<redacted>))");
        assert!(Token::new("  ".into()).is_none());
    }

    #[test]
    fn part_paths() {
        assert_eq!(
            part_path(Path::new("/d/a/b.bin")),
            PathBuf::from("/d/a/b.bin.part")
        );
    }
}
