//! AI Runway's model downloader: fetches a Hugging Face model (its file list from the Hub's
//! file API, then each file's bytes), or one file from a URI, into a directory — resumable,
//! verified (size of every file, sha256 of every LFS file), parallel across files — and reports
//! progress to a [`progress::ProgressSink`] at least every 5 seconds.

pub mod error;
pub mod fetch;
pub mod hub;
pub mod paths;
pub mod progress;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt as _;
use tracing::{info, warn};

pub use error::Error;
use fetch::{Fetcher, Outcome, RetryPolicy, Timeouts, Token};
use hub::{FileEntry, FileFilter};
use progress::{Phase, Progress, ProgressSink};

/// The longest interval between two progress reports.
pub const MAX_PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// Where the files come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A model of a Hugging Face Hub (or a server with its file API).
    Hub {
        /// The Hub's base URL.
        endpoint: reqwest::Url,
        /// `namespace/name`.
        model: String,
        /// Branch, tag or commit.
        revision: String,
        /// Which files to fetch.
        filter: FileFilter,
    },
    /// One file at an http(s) URL.
    Uri {
        /// The URL.
        uri: String,
        /// The Hub's base URL: the token is sent to the URL only when it has the same origin
        /// (scheme, host and port), never to another server.
        endpoint: reqwest::Url,
        /// Its sha256, when known.
        sha256: Option<String>,
    },
}

/// How the files are laid out under [`Config::target_dir`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// At their paths in the model, directly under the directory.
    #[default]
    Flat,
    /// The directory is `HF_HOME`: the files go to the Hugging Face hub cache's
    /// `hub/models--<namespace>--<name>/snapshots/<commit>/`, and once every file is there,
    /// `hub/models--<namespace>--<name>/refs/<revision>` names the commit — so an engine started
    /// with the same `HF_HOME` (vLLM, SGLang, TensorRT-LLM, anything on `huggingface_hub`) finds
    /// the model without downloading it. Only for a Hub source.
    HubCache,
}

/// What to download and how.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the files come from.
    pub source: Source,
    /// The directory the files are written under (and nothing else is): see [`Layout`].
    pub target_dir: PathBuf,
    /// How the files are laid out there.
    pub layout: Layout,
    /// Files fetched at once.
    pub parallel: usize,
    /// The token sent as `Authorization: Bearer` (from `HF_TOKEN`).
    pub token: Option<Token>,
    /// Retries of transient errors.
    pub retry: RetryPolicy,
    /// Client timeouts.
    pub timeouts: Timeouts,
    /// Interval between progress reports (at most [`MAX_PROGRESS_INTERVAL`]).
    pub progress_interval: Duration,
}

/// What a successful run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Files present and verified in the end.
    pub files: u64,
    /// Of those, files that were already present.
    pub files_present: u64,
    /// Bytes of all files.
    pub bytes_total: u64,
    /// Bytes received from the network in this run.
    pub bytes_fetched: u64,
    /// Wall time.
    pub elapsed: Duration,
}

/// Runs a download to the end, reporting progress to every sink during it and once at the end
/// (`Ready`, or `Failed` with the error's message).
pub async fn run(config: Config, sinks: Vec<Box<dyn ProgressSink>>) -> Result<Summary, Error> {
    run_until(config, sinks, std::future::pending()).await
}

/// [`run`], stopped early when `shutdown` completes (a SIGTERM): the transfers stop, what was
/// received stays in the `.part` files for the next run, and the last report is `Failed` with
/// [`Error::Interrupted`].
pub async fn run_until(
    config: Config,
    sinks: Vec<Box<dyn ProgressSink>>,
    shutdown: impl Future<Output = ()>,
) -> Result<Summary, Error> {
    let started = Instant::now();
    let progress = Arc::new(Progress::new());
    let sinks: Arc<Vec<Box<dyn ProgressSink>>> = Arc::new(sinks);
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let reporter = {
        let progress = progress.clone();
        let sinks = sinks.clone();
        let interval = config
            .progress_interval
            .clamp(Duration::from_millis(50), MAX_PROGRESS_INTERVAL);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => deliver(&sinks, &progress.snapshot(Phase::Downloading, None), 1).await,
                    _ = &mut stopped => return,
                }
            }
        })
    };

    let result = tokio::select! {
        result = download(&config, progress.clone()) => result,
        () = shutdown => Err(Error::Interrupted),
    };
    let _ = stop.send(());
    let _ = reporter.await;
    let last = match &result {
        Ok(_) => progress.snapshot(Phase::Ready, None),
        Err(e) => progress.snapshot(Phase::Failed, Some(e.to_string())),
    };
    // The last report matters most (it tells the cache it is Ready): a few tries.
    deliver(&sinks, &last, 3).await;
    let (files, files_present) = result?;
    Ok(Summary {
        files,
        files_present,
        bytes_total: last.bytes_total,
        bytes_fetched: progress.bytes_fetched(),
        elapsed: started.elapsed(),
    })
}

async fn deliver(sinks: &[Box<dyn ProgressSink>], status: &progress::DownloadStatus, tries: u32) {
    for sink in sinks {
        for attempt in 1..=tries {
            match sink.report(status).await {
                Ok(()) => break,
                Err(e) => {
                    warn!(error = %e, attempt, "progress report failed");
                    if attempt < tries {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        }
    }
}

/// Lists and fetches; returns (files, files already present).
async fn download(config: &Config, progress: Arc<Progress>) -> Result<(u64, u64), Error> {
    if config.parallel == 0 || config.parallel > 64 {
        return Err(Error::Config(format!(
            "--parallel {} is not between 1 and 64",
            config.parallel
        )));
    }
    let subject = match &config.source {
        Source::Hub { model, .. } => model.clone(),
        Source::Uri { uri, .. } => uri_without_query(uri),
    };
    let token = match &config.source {
        Source::Hub { .. } => config.token.clone(),
        Source::Uri { uri, endpoint, .. } => {
            config.token.clone().filter(|_| same_origin(uri, endpoint))
        }
    };
    let withheld = token.is_none() && config.token.is_some();
    let fetcher = Fetcher::new(
        subject,
        token,
        progress.clone(),
        config.retry,
        config.timeouts,
    )?
    .token_withheld(withheld);
    let (files, placement): (Vec<FileEntry>, Placement) = match &config.source {
        Source::Hub {
            endpoint,
            model,
            revision,
            filter,
        } => {
            let url = hub::listing_url(endpoint, model, revision)?;
            let what = format!("model {model} at revision {revision}");
            let body = fetcher.get_document(&url, &what).await?;
            let listing = hub::parse_listing(&body, endpoint, model, revision, filter)?;
            let placement = Placement::of(config, model, revision, &listing.commit)?;
            (listing.files, placement)
        }
        Source::Uri { uri, sha256, .. } => {
            if config.layout == Layout::HubCache {
                return Err(Error::Config(
                    "--hf-home needs --model-id (a --uri file has no place in the hub cache); use --target-dir".into(),
                ));
            }
            let files = vec![hub::uri_entry(uri, sha256.as_deref())?];
            (files, Placement::flat(config))
        }
    };
    let files_dir = &placement.files_dir;
    tokio::fs::create_dir_all(files_dir)
        .await
        .map_err(|e| Error::io("create directory", files_dir, e))?;
    let known: u64 = files.iter().filter_map(|f| f.size).sum();
    progress.add_total(files.len() as u64, known);
    info!(files = files.len(), bytes = known, "downloading");

    let present = std::sync::atomic::AtomicU64::new(0);
    futures::stream::iter(files.iter().map(Ok))
        .try_for_each_concurrent(config.parallel, |file| {
            let fetcher = &fetcher;
            let present = &present;
            async move {
                if fetcher.fetch(file, files_dir).await? == Outcome::Present {
                    present.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok::<(), Error>(())
            }
        })
        .await?;
    placement.finish().await?;
    Ok((files.len() as u64, present.into_inner()))
}

/// Where this run's files go, and what is written once they are all there.
struct Placement {
    /// The directory the model's files are written under.
    files_dir: PathBuf,
    /// With [`Layout::HubCache`]: the ref file and the commit it names.
    reference: Option<(PathBuf, String)>,
}

impl Placement {
    fn flat(config: &Config) -> Self {
        Placement {
            files_dir: config.target_dir.clone(),
            reference: None,
        }
    }

    fn of(config: &Config, model: &str, revision: &str, commit: &str) -> Result<Self, Error> {
        if config.layout == Layout::Flat {
            return Ok(Self::flat(config));
        }
        // The names `huggingface_hub` gives them: `models--<namespace>--<name>`, the snapshot
        // named by the commit, the ref by the revision (which may hold `/`, e.g. `refs/pr/1`).
        paths::validate_model_id(model)?;
        paths::validate_relative(revision)?;
        paths::validate_relative(commit)?;
        let repo = config
            .target_dir
            .join("hub")
            .join(format!("models--{}", model.replace('/', "--")));
        Ok(Placement {
            files_dir: repo.join("snapshots").join(commit),
            reference: Some((repo.join("refs").join(revision), commit.to_owned())),
        })
    }

    /// Writes the ref (atomically: a temporary file renamed into place), so the snapshot is
    /// named only once it is whole.
    async fn finish(&self) -> Result<(), Error> {
        let Some((path, commit)) = &self.reference else {
            return Ok(());
        };
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| Error::io("create directory", parent, e))?;
        }
        let temporary = path.with_extension("airunway-tmp");
        tokio::fs::write(&temporary, commit)
            .await
            .map_err(|e| Error::io("write", &temporary, e))?;
        tokio::fs::rename(&temporary, path)
            .await
            .map_err(|e| Error::io("rename", path, e))
    }
}

/// Whether `uri` has the origin (scheme, host, port) of `endpoint`.
pub fn same_origin(uri: &str, endpoint: &reqwest::Url) -> bool {
    reqwest::Url::parse(uri).is_ok_and(|u| u.origin() == endpoint.origin())
}

/// The URI without its query (presigned URLs carry credentials there).
pub fn uri_without_query(uri: &str) -> String {
    match reqwest::Url::parse(uri) {
        Ok(mut url) => {
            url.set_query(None);
            url.set_fragment(None);
            let _ = url.set_password(None);
            let _ = url.set_username("");
            url.to_string()
        }
        Err(_) => "the given URI".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_only_to_the_hub_origin() {
        let hub = reqwest::Url::parse("https://huggingface.co").unwrap();
        assert!(same_origin(
            "https://huggingface.co/org/m/resolve/main/x.gguf",
            &hub
        ));
        assert!(!same_origin("https://example.com/x.gguf", &hub));
        assert!(!same_origin("http://huggingface.co/x.gguf", &hub));
        assert!(!same_origin("https://huggingface.co:8443/x.gguf", &hub));
        assert!(!same_origin("not a url", &hub));
    }

    #[test]
    fn uri_credentials_are_not_shown() {
        assert_eq!(
            uri_without_query("https://user:pw@example.com/a/b.gguf?X-Amz-Signature=s#f"),
            "https://example.com/a/b.gguf"
        );
    }
}
