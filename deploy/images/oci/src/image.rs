//! Images written into a layout: a configuration (user, entrypoint, labels, history, created
//! date), its layers, the manifest, and the tag in `index.json`. [`product_image`] is what
//! `deploy/images/build` packs for each binary; [`ImageSpec`] with no layer is the tiny image
//! the e2e registry tests push.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use oci_spec::image::{
    ANNOTATION_LICENSES, ANNOTATION_REVISION, ANNOTATION_SOURCE, ANNOTATION_TITLE,
    ANNOTATION_VERSION, Arch, ConfigBuilder, DescriptorBuilder, HistoryBuilder, ImageConfiguration,
    ImageConfigurationBuilder, ImageManifest, ImageManifestBuilder, MediaType, Os, RootFsBuilder,
};

use crate::layer::{self, Entry, Layer};
use crate::layout::Layout;
use crate::{Error, Result, canonical_json};

/// The product images' user and group (non-root, as in deploy/images/rootfs/etc/passwd).
pub const USER: &str = "65532:65532";
/// The product images' author.
pub const AUTHOR: &str = "AI Runway";
/// The product images' licence label.
pub const LICENSE: &str = "Apache-2.0";
/// Where the CA bundle is, on the build machine and in the image.
pub const CA_BUNDLE_PATH: &str = "etc/ssl/certs/ca-certificates.crt";

/// What an image is made of.
#[derive(Debug, Clone, Default)]
pub struct ImageSpec {
    /// The configuration's `created` (RFC 3339), also each history entry's.
    pub created: Option<String>,
    /// The configuration's `author`.
    pub author: Option<String>,
    /// `config.User`.
    pub user: Option<String>,
    /// `config.Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `config.Cmd`.
    pub cmd: Vec<String>,
    /// `config.WorkingDir`.
    pub working_dir: Option<String>,
    /// `config.Labels`.
    pub labels: BTreeMap<String, String>,
    /// The layers, base first, each with its history line (`created_by`).
    pub layers: Vec<(Layer, String)>,
}

/// What was written: the manifest digest and the documents.
#[derive(Debug, Clone)]
pub struct Written {
    /// The manifest digest (`sha256:…`).
    pub digest: String,
    /// The image configuration.
    pub config: ImageConfiguration,
    /// The manifest.
    pub manifest: ImageManifest,
}

/// The image configuration and the manifest of an image, as values and as the canonical JSON
/// stored as their blobs.
#[derive(Debug, Clone)]
pub struct Documents {
    /// The configuration's bytes.
    pub raw_config: Vec<u8>,
    /// The manifest's bytes (their digest is the image's digest).
    pub raw_manifest: Vec<u8>,
    /// The configuration.
    pub config: ImageConfiguration,
    /// The manifest.
    pub manifest: ImageManifest,
}

/// The configuration and manifest of `spec`.
pub fn documents(spec: &ImageSpec) -> Result<Documents> {
    let mut config = ConfigBuilder::default();
    if let Some(user) = &spec.user {
        config = config.user(user.clone());
    }
    if !spec.entrypoint.is_empty() {
        config = config.entrypoint(spec.entrypoint.clone());
    }
    if !spec.cmd.is_empty() {
        config = config.cmd(spec.cmd.clone());
    }
    if let Some(dir) = &spec.working_dir {
        config = config.working_dir(dir.clone());
    }
    if !spec.labels.is_empty() {
        config = config.labels(
            spec.labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<HashMap<_, _>>(),
        );
    }
    let mut history = Vec::new();
    for (_, created_by) in &spec.layers {
        let mut entry = HistoryBuilder::default().created_by(created_by.clone());
        if let Some(created) = &spec.created {
            entry = entry.created(created.clone());
        }
        history.push(entry.build()?);
    }
    let mut image = ImageConfigurationBuilder::default()
        .architecture(Arch::Amd64)
        .os(Os::Linux)
        .config(config.build()?)
        .rootfs(
            RootFsBuilder::default()
                .typ("layers")
                .diff_ids(
                    spec.layers
                        .iter()
                        .map(|(l, _)| l.diff_id.clone())
                        .collect::<Vec<_>>(),
                )
                .build()?,
        );
    if !history.is_empty() {
        image = image.history(history);
    }
    if let Some(created) = &spec.created {
        image = image.created(created.clone());
    }
    if let Some(author) = &spec.author {
        image = image.author(author.clone());
    }
    let image = image.build()?;
    let raw_config = canonical_json("image configuration", &image)?;

    let descriptor = |media_type: MediaType, digest: &str, size: usize| {
        DescriptorBuilder::default()
            .media_type(media_type)
            .digest(digest.parse::<oci_spec::image::Digest>()?)
            .size(size as u64)
            .build()
    };
    let manifest = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(descriptor(
            MediaType::ImageConfig,
            &crate::sha256_digest(&raw_config),
            raw_config.len(),
        )?)
        .layers(
            spec.layers
                .iter()
                .map(|(l, _)| descriptor(MediaType::ImageLayerGzip, &l.digest, l.blob.len()))
                .collect::<std::result::Result<Vec<_>, _>>()?,
        )
        .build()?;
    let raw_manifest = canonical_json("manifest", &manifest)?;
    Ok(Documents {
        raw_config,
        raw_manifest,
        config: image,
        manifest,
    })
}

/// Writes the image `spec` into `layout` as `tag`; returns what was written.
pub fn write(layout: &Layout, tag: &str, spec: &ImageSpec) -> Result<Written> {
    let documents = documents(spec)?;
    for (layer, _) in &spec.layers {
        layout.write_blob(&layer.blob)?;
    }
    layout.write_blob(&documents.raw_config)?;
    let digest = layout.tag_manifest(tag, &documents.raw_manifest)?;
    Ok(Written {
        digest,
        config: documents.config,
        manifest: documents.manifest,
    })
}

/// The inputs of a product image (one binary of the workspace).
#[derive(Debug, Clone)]
pub struct ProductImage {
    /// The image name (`airunway-core`): the title label.
    pub name: String,
    /// The crate version: the tag and the version label.
    pub version: String,
    /// The crate's directory in the workspace (for the history line).
    pub crate_dir: String,
    /// The static binary to pack as `/usr/local/bin/<file name>`.
    pub binary: PathBuf,
    /// `deploy/images/rootfs/etc/passwd`.
    pub passwd: PathBuf,
    /// `deploy/images/rootfs/etc/group`.
    pub group: PathBuf,
    /// The CA bundle to pack as `/etc/ssl/certs/ca-certificates.crt`.
    pub ca_bundle: PathBuf,
    /// The version of the CA bundle's package (for the history line).
    pub ca_version: String,
    /// SOURCE_DATE_EPOCH: every mtime and the created date.
    pub epoch: i64,
    /// The source revision label.
    pub revision: String,
    /// The source URL label.
    pub source: String,
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) if !bytes.is_empty() => Ok(bytes),
        Ok(_) => Err(Error::Input(format!("{what} {} is empty", path.display()))),
        Err(e) => Err(Error::Input(format!(
            "{what} {} cannot be read: {e}",
            path.display()
        ))),
    }
}

/// `epoch` (seconds) as the RFC 3339 UTC date of the configuration (`2025-01-02T03:04:05Z`).
pub fn created(epoch: i64) -> Result<String> {
    let time = jiff::Timestamp::from_second(epoch)
        .map_err(|e| Error::Input(format!("SOURCE_DATE_EPOCH {epoch}: {e}")))?;
    Ok(time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// The base layer shared by every product image: `/etc/passwd`, `/etc/group`, the CA bundle
/// and `/tmp` (1777).
pub fn base_layer(passwd: &Path, group: &Path, ca_bundle: &Path, epoch: u64) -> Result<Layer> {
    let ca = read(ca_bundle, "the CA bundle").map_err(|e| {
        Error::Input(format!(
            "{e} (Debian/Ubuntu: apt-get install -y ca-certificates)"
        ))
    })?;
    layer::build(
        &[
            Entry::file("etc/passwd", 0o644, read(passwd, "the passwd file")?),
            Entry::file("etc/group", 0o644, read(group, "the group file")?),
            Entry::file(CA_BUNDLE_PATH, 0o644, ca),
            Entry::dir("tmp", 0o1777),
        ],
        epoch,
    )
}

/// The spec of a product image: the base layer, then the binary at `/usr/local/bin/<name>`,
/// run as 65532:65532 from `/` with the OCI labels.
pub fn product_spec(image: &ProductImage) -> Result<ImageSpec> {
    let epoch = u64::try_from(image.epoch)
        .map_err(|_| Error::Input(format!("SOURCE_DATE_EPOCH {} is negative", image.epoch)))?;
    let created = created(image.epoch)?;
    let binary_name = image
        .binary
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::Input(format!("{} has no file name", image.binary.display())))?;
    let program = format!("/usr/local/bin/{binary_name}");
    let base = base_layer(&image.passwd, &image.group, &image.ca_bundle, epoch)?;
    let app = layer::build(
        &[Entry::file(
            &program,
            0o755,
            read(&image.binary, "the binary")?,
        )],
        epoch,
    )?;
    let labels = BTreeMap::from([
        (ANNOTATION_TITLE.to_string(), image.name.clone()),
        (ANNOTATION_VERSION.to_string(), image.version.clone()),
        (ANNOTATION_SOURCE.to_string(), image.source.clone()),
        (ANNOTATION_REVISION.to_string(), image.revision.clone()),
        (ANNOTATION_LICENSES.to_string(), LICENSE.to_string()),
    ]);
    Ok(ImageSpec {
        created: Some(created),
        author: Some(AUTHOR.to_string()),
        user: Some(USER.to_string()),
        entrypoint: vec![program.clone()],
        cmd: Vec::new(),
        working_dir: Some("/".to_string()),
        labels,
        layers: vec![
            (
                base,
                format!(
                    "deploy/images/build: base (users 65532, ca-certificates {}, /tmp)",
                    image.ca_version
                ),
            ),
            (
                app,
                format!(
                    "deploy/images/build: {program} ({} {})",
                    image.crate_dir, image.version
                ),
            ),
        ],
    })
}

/// Writes the product image into a fresh layout at `dir` (anything there before is removed),
/// tagged with its version; returns what was written.
pub fn product_image(dir: &Path, image: &ProductImage) -> Result<Written> {
    let spec = product_spec(image)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io("removing", dir, e))?;
    }
    let layout = Layout::create(dir)?;
    write(&layout, &image.version, &spec)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    struct Inputs {
        dir: PathBuf,
        image: ProductImage,
    }

    fn inputs(name: &str) -> Inputs {
        let dir = std::env::temp_dir().join(format!(
            "airunway-images-image-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in [
            ("passwd", "nonroot:x:65532:65532::/:/sbin/nologin\n"),
            ("group", "nonroot:x:65532:\n"),
            ("ca.crt", "-----BEGIN CERTIFICATE-----\n"),
            ("airunway-core", "\x7fELF static"),
        ] {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let image = ProductImage {
            name: "airunway-core".into(),
            version: "0.1.0".into(),
            crate_dir: "core-controller".into(),
            binary: dir.join("airunway-core"),
            passwd: dir.join("passwd"),
            group: dir.join("group"),
            ca_bundle: dir.join("ca.crt"),
            ca_version: "20250419".into(),
            epoch: 1_735_787_045,
            revision: "0123abc".into(),
            source: "https://github.com/airunway/airunway".into(),
        };
        Inputs { dir, image }
    }

    #[test]
    fn created_is_rfc3339_utc_seconds() {
        assert_eq!(created(0).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(created(1_735_787_045).unwrap(), "2025-01-02T03:04:05Z");
    }

    #[test]
    fn the_product_configuration_has_user_entrypoint_labels_and_history() {
        let inputs = inputs("config");
        let Documents {
            raw_config,
            raw_manifest,
            config,
            manifest,
        } = documents(&product_spec(&inputs.image).unwrap()).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&raw_config).unwrap();
        assert_eq!(json["architecture"], "amd64");
        assert_eq!(json["os"], "linux");
        assert_eq!(json["author"], "AI Runway");
        assert_eq!(json["created"], "2025-01-02T03:04:05Z");
        assert_eq!(json["config"]["User"], "65532:65532");
        assert_eq!(json["config"]["WorkingDir"], "/");
        assert_eq!(
            json["config"]["Entrypoint"],
            serde_json::json!(["/usr/local/bin/airunway-core"])
        );
        let labels = &json["config"]["Labels"];
        assert_eq!(labels["org.opencontainers.image.title"], "airunway-core");
        assert_eq!(labels["org.opencontainers.image.version"], "0.1.0");
        assert_eq!(labels["org.opencontainers.image.revision"], "0123abc");
        assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
        assert_eq!(
            labels["org.opencontainers.image.source"],
            "https://github.com/airunway/airunway"
        );
        assert_eq!(json["rootfs"]["type"], "layers");
        assert_eq!(json["rootfs"]["diff_ids"].as_array().unwrap().len(), 2);
        assert_eq!(
            json["history"],
            serde_json::json!([
                {"created": "2025-01-02T03:04:05Z",
                 "created_by": "deploy/images/build: base (users 65532, ca-certificates 20250419, /tmp)"},
                {"created": "2025-01-02T03:04:05Z",
                 "created_by": "deploy/images/build: /usr/local/bin/airunway-core (core-controller 0.1.0)"},
            ])
        );
        assert_eq!(config.rootfs().diff_ids().len(), 2);

        let m: serde_json::Value = serde_json::from_slice(&raw_manifest).unwrap();
        assert_eq!(m["schemaVersion"], 2);
        assert_eq!(m["mediaType"], "application/vnd.oci.image.manifest.v1+json");
        assert_eq!(
            m["config"]["mediaType"],
            "application/vnd.oci.image.config.v1+json"
        );
        assert_eq!(m["config"]["digest"], crate::sha256_digest(&raw_config));
        assert_eq!(m["config"]["size"], raw_config.len());
        let layers = m["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 2);
        assert!(
            layers
                .iter()
                .all(|l| l["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip")
        );
        assert_eq!(manifest.layers().len(), 2);
        std::fs::remove_dir_all(&inputs.dir).unwrap();
    }

    #[test]
    fn the_same_inputs_give_the_same_digest_and_another_binary_another() {
        let inputs = inputs("digest");
        let a = product_image(&inputs.dir.join("a"), &inputs.image).unwrap();
        let b = product_image(&inputs.dir.join("b"), &inputs.image).unwrap();
        assert_eq!(a.digest, b.digest);
        // The layouts are byte for byte the same.
        for file in ["index.json", "oci-layout"] {
            assert_eq!(
                std::fs::read(inputs.dir.join("a").join(file)).unwrap(),
                std::fs::read(inputs.dir.join("b").join(file)).unwrap()
            );
        }
        let layout = Layout::open(&inputs.dir.join("a")).unwrap();
        let tagged = layout.image("0.1.0").unwrap();
        assert_eq!(tagged.digest(), a.digest);
        assert_eq!(crate::sha256_digest(&tagged.raw_manifest), a.digest);
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(inputs.dir.join("a/index.json")).unwrap())
                .unwrap();
        assert_eq!(
            index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
            "0.1.0"
        );
        assert_eq!(index["manifests"][0]["digest"], a.digest.as_str());

        std::fs::write(&inputs.image.binary, "\x7fELF other").unwrap();
        let c = product_image(&inputs.dir.join("c"), &inputs.image).unwrap();
        assert_ne!(c.digest, a.digest);
        // The base layer is shared.
        assert_eq!(c.manifest.layers()[0], a.manifest.layers()[0]);
        assert_ne!(c.manifest.layers()[1], a.manifest.layers()[1]);
        std::fs::remove_dir_all(&inputs.dir).unwrap();
    }

    #[test]
    fn a_missing_ca_bundle_is_named_with_the_install_command() {
        let mut inputs = inputs("ca");
        inputs.image.ca_bundle = inputs.dir.join("missing.crt");
        let error = product_spec(&inputs.image).unwrap_err().to_string();
        assert!(error.contains("the CA bundle"), "{error}");
        assert!(error.contains("missing.crt"), "{error}");
        assert!(
            error.contains("apt-get install -y ca-certificates"),
            "{error}"
        );
        std::fs::remove_dir_all(&inputs.dir).unwrap();
    }

    #[test]
    fn a_tiny_image_has_no_layer_and_its_own_command() {
        let spec = ImageSpec {
            cmd: vec!["/serve-e2e".into()],
            labels: BTreeMap::from([("k".into(), "v".into())]),
            ..ImageSpec::default()
        };
        let Documents {
            raw_config,
            raw_manifest,
            ..
        } = documents(&spec).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&raw_config).unwrap();
        assert_eq!(json["config"]["Cmd"], serde_json::json!(["/serve-e2e"]));
        assert_eq!(json["config"]["Labels"]["k"], "v");
        assert!(json.get("created").is_none());
        assert_eq!(json["rootfs"]["diff_ids"], serde_json::json!([]));
        let m: serde_json::Value = serde_json::from_slice(&raw_manifest).unwrap();
        assert_eq!(m["layers"], serde_json::json!([]));
    }
}
