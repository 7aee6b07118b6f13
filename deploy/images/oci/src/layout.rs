//! An OCI image layout on disk: `oci-layout`, `index.json` (one manifest descriptor per tag,
//! named by `org.opencontainers.image.ref.name`) and the blobs under `blobs/sha256/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use oci_spec::image::{
    ANNOTATION_REF_NAME, Descriptor, DescriptorBuilder, ImageIndex, ImageIndexBuilder,
    ImageManifest, MediaType, OciLayoutBuilder,
};

use crate::{Error, Result, canonical_json, sha256_digest};

/// The version of the layout format written to `oci-layout`.
pub const LAYOUT_VERSION: &str = "1.0.0";

/// An image of a layout, read by its tag.
#[derive(Debug, Clone)]
pub struct TaggedImage {
    /// The manifest's descriptor in `index.json` (its digest is the image's digest).
    pub descriptor: Descriptor,
    /// The manifest's bytes as stored.
    pub raw_manifest: Vec<u8>,
    /// The manifest.
    pub manifest: ImageManifest,
}

impl TaggedImage {
    /// The manifest digest (`sha256:…`): what a registry reports for the image once pushed.
    pub fn digest(&self) -> String {
        self.descriptor.digest().to_string()
    }
}

/// An OCI image layout directory.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// Opens the layout at `root`, creating an empty one (no image) when there is none.
    pub fn create(root: &Path) -> Result<Layout> {
        let layout = Layout {
            root: root.to_path_buf(),
        };
        let blobs = root.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).map_err(|e| Error::io("creating", &blobs, e))?;
        let marker = root.join("oci-layout");
        if !marker.is_file() {
            let content = OciLayoutBuilder::default()
                .image_layout_version(LAYOUT_VERSION)
                .build()?;
            layout.write(&marker, &canonical_json("oci-layout", &content)?)?;
        }
        if !root.join("index.json").is_file() {
            layout.write_index(&empty_index()?)?;
        }
        Ok(layout)
    }

    /// Opens the existing layout at `root`.
    pub fn open(root: &Path) -> Result<Layout> {
        if !root.join("index.json").is_file() || !root.join("oci-layout").is_file() {
            return Err(Error::Layout(format!(
                "{} is not an OCI image layout (no oci-layout or index.json)",
                root.display()
            )));
        }
        Ok(Layout {
            root: root.to_path_buf(),
        })
    }

    /// The layout's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        std::fs::write(path, bytes).map_err(|e| Error::io("writing", path, e))
    }

    fn blob_path(&self, digest: &str) -> Result<PathBuf> {
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| Error::Layout(format!("{digest} is not a sha256 digest")))?;
        Ok(self.root.join("blobs/sha256").join(hex))
    }

    /// Stores `bytes` as a blob; returns its digest.
    pub fn write_blob(&self, bytes: &[u8]) -> Result<String> {
        let digest = sha256_digest(bytes);
        let path = self.blob_path(&digest)?;
        if !path.is_file() {
            self.write(&path, bytes)?;
        }
        Ok(digest)
    }

    /// The blob `digest`, checked against its digest.
    pub fn read_blob(&self, digest: &str) -> Result<Vec<u8>> {
        let path = self.blob_path(digest)?;
        let bytes = std::fs::read(&path).map_err(|e| Error::io("reading", &path, e))?;
        if sha256_digest(&bytes) != digest {
            return Err(Error::Layout(format!(
                "blob {} does not match its digest",
                path.display()
            )));
        }
        Ok(bytes)
    }

    /// The layout's `index.json`.
    pub fn index(&self) -> Result<ImageIndex> {
        let path = self.root.join("index.json");
        let bytes = std::fs::read(&path).map_err(|e| Error::io("reading", &path, e))?;
        serde_json::from_slice(&bytes).map_err(|source| Error::Json {
            what: "index.json",
            source,
        })
    }

    fn write_index(&self, index: &ImageIndex) -> Result<()> {
        self.write(
            &self.root.join("index.json"),
            &canonical_json("index.json", index)?,
        )
    }

    /// Stores the manifest `raw` as a blob and names it `tag` in `index.json` (replacing the
    /// image that had that tag); returns its digest.
    pub fn tag_manifest(&self, tag: &str, raw: &[u8]) -> Result<String> {
        let digest = self.write_blob(raw)?;
        let descriptor = DescriptorBuilder::default()
            .media_type(MediaType::ImageManifest)
            .digest(
                digest
                    .parse::<oci_spec::image::Digest>()
                    .map_err(Error::Spec)?,
            )
            .size(raw.len() as u64)
            .annotations(HashMap::from([(
                ANNOTATION_REF_NAME.to_string(),
                tag.to_string(),
            )]))
            .build()?;
        let mut index = self.index()?;
        let mut manifests: Vec<Descriptor> = index
            .manifests()
            .iter()
            .filter(|d| ref_name(d) != Some(tag))
            .cloned()
            .collect();
        manifests.push(descriptor);
        index.set_manifests(manifests);
        self.write_index(&index)?;
        Ok(digest)
    }

    /// The image tagged `tag`.
    pub fn image(&self, tag: &str) -> Result<TaggedImage> {
        let index = self.index()?;
        let descriptor = index
            .manifests()
            .iter()
            .find(|d| ref_name(d) == Some(tag))
            .cloned()
            .ok_or_else(|| {
                let tags: Vec<&str> = index.manifests().iter().filter_map(ref_name).collect();
                Error::Layout(format!(
                    "no image tagged {tag} in {} (tags: {})",
                    self.root.display(),
                    if tags.is_empty() {
                        "none".to_string()
                    } else {
                        tags.join(", ")
                    }
                ))
            })?;
        let raw_manifest = self.read_blob(descriptor.digest().as_ref())?;
        let manifest = serde_json::from_slice(&raw_manifest).map_err(|source| Error::Json {
            what: "manifest",
            source,
        })?;
        Ok(TaggedImage {
            descriptor,
            raw_manifest,
            manifest,
        })
    }
}

/// The tag of a manifest descriptor of `index.json`.
fn ref_name(descriptor: &Descriptor) -> Option<&str> {
    descriptor
        .annotations()
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_REF_NAME))
        .map(String::as_str)
}

fn empty_index() -> Result<ImageIndex> {
    Ok(ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(Vec::<Descriptor>::new())
        .build()?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "airunway-images-layout-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_new_layout_has_its_marker_and_an_empty_index() {
        let dir = temp("new");
        let layout = Layout::create(&dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("oci-layout")).unwrap(),
            r#"{"imageLayoutVersion":"1.0.0"}"#
        );
        assert!(layout.index().unwrap().manifests().is_empty());
        assert!(Layout::open(&dir).is_ok());
        assert!(Layout::open(&dir.join("nothing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn blobs_are_checked_against_their_digest() {
        let dir = temp("blobs");
        let layout = Layout::create(&dir).unwrap();
        let digest = layout.write_blob(b"hello").unwrap();
        assert_eq!(layout.read_blob(&digest).unwrap(), b"hello");
        std::fs::write(layout.blob_path(&digest).unwrap(), b"tampered").unwrap();
        assert!(layout.read_blob(&digest).is_err());
        assert!(layout.read_blob("sha256:../../etc/passwd").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
