//! `airunway-images`: AI Runway's images without a container daemon (docs/install.md).
//!
//! ```text
//! airunway-images build --layout DIR --name NAME --version V --binary PATH ...   a product image
//! airunway-images new --layout DIR --tag T [--cmd C]... [--created T] [--label K=V]...
//! airunway-images digest oci:<layout>:<tag> | [docker://]<registry>/<repo>:<tag>
//! airunway-images manifest <location>            the manifest's bytes
//! airunway-images push <source> <destination>    oci:… to docker://… (or to oci:…)
//! airunway-images unpack oci:<layout>:<tag> DIR  DIR/rootfs and DIR/config.json
//! ```
//!
//! Each prints what it made or read on standard output (a digest, a manifest) and errors on
//! standard error with a non-zero exit.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use airunway_images::image::{self, ImageSpec, ProductImage};
use airunway_images::layout::Layout;
use airunway_images::location::Location;
use airunway_images::registry::{self, Credentials, Transport};
use airunway_images::unpack;

#[derive(Parser)]
#[command(
    name = "airunway-images",
    version,
    about = "Builds, reads, unpacks and pushes AI Runway's OCI images"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Writes a product image (base layer, then the binary) into a fresh layout; prints its
    /// manifest digest.
    Build(BuildArgs),
    /// Adds an image with no layer (a command, labels, a created date) to a layout, as TAG;
    /// prints its manifest digest.
    New(NewArgs),
    /// Prints the manifest digest of an image.
    Digest {
        #[command(flatten)]
        remote: RemoteArgs,
        /// `oci:<layout>:<tag>` or `[docker://]<registry>/<repository>:<tag>`.
        location: String,
    },
    /// Prints the manifest of an image, as stored.
    Manifest {
        #[command(flatten)]
        remote: RemoteArgs,
        /// `oci:<layout>:<tag>` or `[docker://]<registry>/<repository>:<tag>`.
        location: String,
    },
    /// Copies an image of a layout to a registry (or to another layout); prints its digest.
    Push {
        #[command(flatten)]
        remote: RemoteArgs,
        /// `oci:<layout>:<tag>`.
        source: String,
        /// `[docker://]<registry>/<repository>:<tag>` or `oci:<layout>:<tag>`.
        destination: String,
    },
    /// Extracts an image's layers into DIR/rootfs and writes its configuration to
    /// DIR/config.json.
    Unpack {
        /// Set the owners the layers give (default: when running as root).
        #[arg(long)]
        owners: Option<bool>,
        /// `oci:<layout>:<tag>`.
        source: String,
        /// The bundle directory (replaced).
        dir: PathBuf,
    },
}

#[derive(Args)]
struct BuildArgs {
    /// The layout directory to write (replaced).
    #[arg(long)]
    layout: PathBuf,
    /// The image name (title label).
    #[arg(long)]
    name: String,
    /// The crate version (tag and version label).
    #[arg(long)]
    version: String,
    /// The crate's directory (history line).
    #[arg(long)]
    crate_dir: String,
    /// The static binary, packed as /usr/local/bin/<its file name>.
    #[arg(long)]
    binary: PathBuf,
    /// The passwd file of the image.
    #[arg(long, default_value = "deploy/images/rootfs/etc/passwd")]
    passwd: PathBuf,
    /// The group file of the image.
    #[arg(long, default_value = "deploy/images/rootfs/etc/group")]
    group: PathBuf,
    /// The CA bundle to pack.
    #[arg(long, default_value = "/etc/ssl/certs/ca-certificates.crt")]
    ca_bundle: PathBuf,
    /// The version of the CA bundle's package (history line).
    #[arg(long, default_value = "unknown")]
    ca_version: String,
    /// SOURCE_DATE_EPOCH: every file time and the created date.
    #[arg(long, env = "SOURCE_DATE_EPOCH")]
    epoch: i64,
    /// The source revision label.
    #[arg(long)]
    revision: String,
    /// The source URL label.
    #[arg(long)]
    source: String,
}

#[derive(Args)]
struct NewArgs {
    /// The layout directory (created when missing).
    #[arg(long)]
    layout: PathBuf,
    /// The tag.
    #[arg(long)]
    tag: String,
    /// config.Entrypoint (repeat for each argument).
    #[arg(long)]
    entrypoint: Vec<String>,
    /// config.Cmd (repeat for each argument).
    #[arg(long)]
    cmd: Vec<String>,
    /// The created date (RFC 3339).
    #[arg(long)]
    created: Option<String>,
    /// A config label, KEY=VALUE (repeatable).
    #[arg(long)]
    label: Vec<String>,
}

#[derive(Args)]
struct RemoteArgs {
    /// Plain HTTP to the registry (a local registry without TLS).
    #[arg(long)]
    plain_http: bool,
    /// Verify the registry's TLS certificate (`--tls-verify=false` to skip).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    tls_verify: bool,
    /// A CA certificate (PEM) to trust for the registry (repeatable).
    #[arg(long)]
    ca_file: Vec<PathBuf>,
    /// The auth file to read credentials from (`podman login`/`skopeo login`'s auth.json or
    /// Docker's config.json). Default: $REGISTRY_AUTH_FILE, then
    /// $XDG_RUNTIME_DIR/containers/auth.json, then $DOCKER_CONFIG/config.json or
    /// ~/.docker/config.json, whichever exists.
    #[arg(long)]
    authfile: Option<PathBuf>,
    /// A user name (with --password-env) instead of the auth file.
    #[arg(long, requires = "password_env")]
    username: Option<String>,
    /// The environment variable holding the password or token of --username.
    #[arg(long, requires = "username")]
    password_env: Option<String>,
}

impl RemoteArgs {
    fn transport(&self) -> Transport {
        Transport {
            plain_http: self.plain_http,
            insecure_skip_tls_verify: !self.tls_verify,
            ca_files: self.ca_file.clone(),
        }
    }

    fn credentials(&self, location: &Location) -> Result<Credentials> {
        let Location::Registry(reference) = location else {
            return Ok(Credentials::Anonymous);
        };
        if let (Some(username), Some(variable)) = (&self.username, &self.password_env) {
            let password = std::env::var(variable)
                .with_context(|| format!("--password-env {variable}: not set"))?;
            return Ok(Credentials::Basic {
                username: username.clone(),
                password,
            });
        }
        let file = match &self.authfile {
            Some(file) => Some(file.clone()),
            None => default_auth_files().into_iter().find(|f| f.is_file()),
        };
        let Some(file) = file else {
            return Ok(Credentials::Anonymous);
        };
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        Ok(
            registry::credentials_from_auth_file(&bytes, reference.registry())
                .with_context(|| format!("reading {}", file.display()))?
                .unwrap_or_default(),
        )
    }
}

fn default_auth_files() -> Vec<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut files = Vec::new();
    files.extend(var("REGISTRY_AUTH_FILE"));
    files.extend(var("XDG_RUNTIME_DIR").map(|d| d.join("containers/auth.json")));
    match var("DOCKER_CONFIG") {
        Some(dir) => files.push(dir.join("config.json")),
        None => files.extend(var("HOME").map(|h| h.join(".docker/config.json"))),
    }
    files
}

fn layout_location(location: &str) -> Result<(PathBuf, String)> {
    match location.parse::<Location>()? {
        Location::Layout { dir, tag } => Ok((dir, tag)),
        Location::Registry(_) => bail!("{location}: expected oci:<layout>:<tag>"),
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Build(a) => {
            let written = image::product_image(
                &a.layout,
                &ProductImage {
                    name: a.name,
                    version: a.version,
                    crate_dir: a.crate_dir,
                    binary: a.binary,
                    passwd: a.passwd,
                    group: a.group,
                    ca_bundle: a.ca_bundle,
                    ca_version: a.ca_version,
                    epoch: a.epoch,
                    revision: a.revision,
                    source: a.source,
                },
            )?;
            writeln!(stdout, "{}", written.digest)?;
        }
        Command::New(a) => {
            let mut labels = BTreeMap::new();
            for label in &a.label {
                let (key, value) = label
                    .split_once('=')
                    .with_context(|| format!("--label {label}: expected KEY=VALUE"))?;
                labels.insert(key.to_string(), value.to_string());
            }
            let layout = Layout::create(&a.layout)?;
            let spec = ImageSpec {
                created: a.created,
                entrypoint: a.entrypoint,
                cmd: a.cmd,
                labels,
                ..ImageSpec::default()
            };
            writeln!(stdout, "{}", image::write(&layout, &a.tag, &spec)?.digest)?;
        }
        Command::Digest { remote, location } => {
            let location = location.parse::<Location>()?;
            let credentials = remote.credentials(&location)?;
            let (_, digest) =
                registry::manifest(&location, &remote.transport(), &credentials).await?;
            writeln!(stdout, "{digest}")?;
        }
        Command::Manifest { remote, location } => {
            let location = location.parse::<Location>()?;
            let credentials = remote.credentials(&location)?;
            let (raw, _) = registry::manifest(&location, &remote.transport(), &credentials).await?;
            stdout.write_all(&raw)?;
        }
        Command::Push {
            remote,
            source,
            destination,
        } => {
            let (dir, tag) = layout_location(&source)?;
            let destination = destination.parse::<Location>()?;
            let credentials = remote.credentials(&destination)?;
            let digest = registry::push(
                &Layout::open(&dir)?,
                &tag,
                &destination,
                &remote.transport(),
                &credentials,
            )
            .await?;
            writeln!(stdout, "{digest}")?;
        }
        Command::Unpack {
            owners,
            source,
            dir,
        } => {
            let (layout, tag) = layout_location(&source)?;
            let layout = Layout::open(&layout)?;
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
            }
            let config = unpack::unpack(
                &layout,
                &tag,
                &dir.join("rootfs"),
                owners.unwrap_or_else(is_root),
            )?;
            let file = dir.join("config.json");
            std::fs::write(&file, serde_json::to_vec_pretty(&config)?)
                .with_context(|| format!("writing {}", file.display()))?;
        }
    }
    Ok(())
}
