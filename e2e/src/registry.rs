//! A real OCI registry on loopback: the distribution registry (`github.com/distribution/
//! distribution/v3`, `cmd/registry`, built by `e2e/control-plane/build.sh` at
//! `DISTRIBUTION_VERSION`), started with a config file on a free port, its storage in a
//! temporary folder, and its access log (one line per request) in its log file. Images are
//! written and pushed with the workspace's image tool (`airunway-images new` writes a tiny OCI
//! image layout, `airunway-images push --plain-http` sends it over the distribution API);
//! nothing leaves the machine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::{images, paths};

/// The media type of an OCI image index.
const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
use crate::process::{Lifetime, ProcessHandle, Spawn};

/// The registry binary: `$AIRUNWAY_REGISTRY_BIN`, else the version-keyed cache of
/// `e2e/control-plane/build.sh`.
pub fn registry_binary() -> Result<PathBuf> {
    let path = match std::env::var_os("AIRUNWAY_REGISTRY_BIN") {
        Some(path) => PathBuf::from(path),
        None => paths::go_binaries_cache()?
            .join(format!(
                "distribution-v{}",
                paths::pinned_version("DISTRIBUTION_VERSION")?
            ))
            .join("registry"),
    };
    if !path.is_file() {
        bail!(
            "{} is missing: build it with `e2e/control-plane/build.sh`",
            path.display()
        );
    }
    Ok(path)
}

/// A running local registry.
#[derive(Debug)]
pub struct LocalRegistry {
    /// The process (stopped when dropped with the test process).
    pub process: ProcessHandle,
    /// `127.0.0.1:<port>`.
    pub address: String,
    dir: PathBuf,
}

impl LocalRegistry {
    /// Starts a registry with its storage and log under `dir`, and waits until it answers.
    pub fn start(dir: &Path) -> Result<LocalRegistry> {
        std::fs::create_dir_all(dir)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let address = format!("127.0.0.1:{port}");
        let config = dir.join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  formatter: text\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
                dir.join("data").display()
            ),
        )?;
        let process = Spawn {
            name: "registry".into(),
            program: registry_binary()?,
            args: vec!["serve".into(), config.display().to_string()],
            env: Default::default(),
            log: dir.join("registry.log"),
            lifetime: Lifetime::WithTestProcess,
        }
        .start()?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&address).is_err() {
            if let Some(status) = process.exit_status() {
                bail!("the registry exited ({status}):\n{}", process.log_tail(20));
            }
            if Instant::now() > deadline {
                bail!("the registry did not listen on {address} within 20 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(LocalRegistry {
            process,
            address,
            dir: dir.to_path_buf(),
        })
    }

    /// Builds a tiny image (no layer, a command) with the image tool and pushes it to
    /// `<address>/<repository>:<tag>`; returns its manifest digest as the registry reports it.
    pub fn push_tiny_image(&self, repository: &str, tag: &str) -> Result<String> {
        self.push_image(repository, tag, None, &[])
    }

    /// [`LocalRegistry::push_tiny_image`] with the config's `created` time (RFC 3339) and
    /// config labels (e.g. `org.opencontainers.image.revision`).
    pub fn push_image(
        &self,
        repository: &str,
        tag: &str,
        created: Option<&str>,
        labels: &[(&str, &str)],
    ) -> Result<String> {
        let layout = self
            .dir
            .join(format!("layout-{}", repository.replace('/', "-")));
        let mut new: Vec<String> = vec![
            "new".into(),
            "--layout".into(),
            layout.display().to_string(),
            "--tag".into(),
            tag.into(),
            "--cmd".into(),
            format!("/serve-{tag}"),
        ];
        if let Some(created) = created {
            new.extend(["--created".into(), created.to_string()]);
        }
        for (key, value) in labels {
            new.extend(["--label".into(), format!("{key}={value}")]);
        }
        images::run_tool(&new)?;
        let destination = format!("docker://{}/{repository}:{tag}", self.address);
        images::run_tool([
            "push",
            "--plain-http",
            &format!("oci:{}:{tag}", layout.display()),
            &destination,
        ])?;
        images::run_tool(["digest", "--plain-http", &destination])
    }

    /// Pushes an OCI image index to `<repository>:<tag>` whose entries are the images already
    /// pushed as `<repository>:<entry tag>`, each with its platform (`os`, `architecture`),
    /// in the order given; returns the index's digest as the registry reports it.
    pub async fn push_index(
        &self,
        repository: &str,
        tag: &str,
        entries: &[(&str, &str, &str)],
    ) -> Result<String> {
        let mut manifests = Vec::new();
        for (entry_tag, os, architecture) in entries {
            let source = format!("docker://{}/{repository}:{entry_tag}", self.address);
            let raw = images::run_tool(["manifest", "--plain-http", &source])?;
            let digest = images::run_tool(["digest", "--plain-http", &source])?;
            manifests.push(serde_json::json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": raw.len(),
                "platform": {"os": os, "architecture": architecture},
            }));
        }
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": INDEX_MEDIA_TYPE,
            "manifests": manifests,
        });
        let request = http::Request::put(format!(
            "http://{}/v2/{repository}/manifests/{tag}",
            self.address
        ))
        .header(http::header::CONTENT_TYPE, INDEX_MEDIA_TYPE)
        .body(Full::new(Bytes::from(serde_json::to_vec(&index)?)))?;
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let response = client.request(request).await?;
        let status = response.status();
        let digest = response
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.into_body().collect().await?.to_bytes();
        match digest {
            Some(digest) if status.is_success() => Ok(digest),
            _ => bail!(
                "pushing the index {repository}:{tag}: {status} {}",
                String::from_utf8_lossy(&body)
            ),
        }
    }

    /// How many blob requests (`GET /v2/<repository>/blobs/...`) the access log shows from
    /// clients whose user agent contains `agent`.
    pub fn blob_requests(&self, repository: &str, agent: &str) -> usize {
        self.requests(&format!("/v2/{repository}/blobs/"), agent)
    }

    /// How many manifest requests (`GET`/`HEAD /v2/<repository>/manifests/...`) the access log
    /// shows from clients whose user agent contains `agent`.
    pub fn manifest_requests(&self, repository: &str, agent: &str) -> usize {
        self.requests(&format!("/v2/{repository}/manifests/"), agent)
    }

    /// How many requests for a path containing `needle` the access log shows from `agent`.
    fn requests(&self, needle: &str, agent: &str) -> usize {
        std::fs::read_to_string(self.process.log())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" HTTP/1.1\" ") && l.contains(needle) && l.contains(agent))
            .count()
    }
}
