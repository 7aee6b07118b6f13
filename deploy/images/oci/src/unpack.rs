//! An image's root filesystem: its layers extracted in order into a directory (each layer's
//! digest checked first, whiteouts applied), with modes and times as the layers have them and,
//! when asked (as root), their owners.

use std::path::Path;

use flate2::read::GzDecoder;
use oci_spec::image::{ImageConfiguration, MediaType};

use crate::layout::Layout;
use crate::{Error, Result};

/// The prefix of a whiteout entry (the file it names is deleted by the layer).
const WHITEOUT_PREFIX: &str = ".wh.";
/// An opaque directory marker (the directory's earlier content is deleted by the layer).
const OPAQUE_WHITEOUT: &str = ".wh..wh..opq";

/// Extracts image `tag` of `layout` into `rootfs` (created; it must not hold anything else);
/// returns the image configuration. `owners`: set the layers' owners (needs root).
pub fn unpack(
    layout: &Layout,
    tag: &str,
    rootfs: &Path,
    owners: bool,
) -> Result<ImageConfiguration> {
    let image = layout.image(tag)?;
    let raw_config = layout.read_blob(image.manifest.config().digest().as_ref())?;
    let config: ImageConfiguration =
        serde_json::from_slice(&raw_config).map_err(|source| Error::Json {
            what: "image configuration",
            source,
        })?;
    std::fs::create_dir_all(rootfs).map_err(|e| Error::io("creating", rootfs, e))?;
    for descriptor in image.manifest.layers() {
        let blob = layout.read_blob(descriptor.digest().as_ref())?;
        let reader: Box<dyn std::io::Read> = match descriptor.media_type() {
            MediaType::ImageLayerGzip => Box::new(GzDecoder::new(blob.as_slice())),
            MediaType::ImageLayer => Box::new(blob.as_slice()),
            other => {
                return Err(Error::Layout(format!(
                    "layer {} has media type {other}, not a tar or tar+gzip layer",
                    descriptor.digest()
                )));
            }
        };
        extract(reader, rootfs, owners)
            .map_err(|e| Error::io("extracting a layer into", rootfs, e))?;
    }
    Ok(config)
}

fn extract(reader: impl std::io::Read, rootfs: &Path, owners: bool) -> std::io::Result<()> {
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_preserve_ownerships(owners);
    archive.set_overwrite(true);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(hidden) = name.strip_prefix(WHITEOUT_PREFIX) {
            let parent = rootfs.join(path.parent().unwrap_or(Path::new("")));
            if !parent.starts_with(rootfs) || hidden.contains('/') {
                continue;
            }
            if name == OPAQUE_WHITEOUT {
                if let Ok(children) = std::fs::read_dir(&parent) {
                    for child in children.flatten() {
                        remove(&child.path())?;
                    }
                }
            } else {
                remove(&parent.join(hidden))?;
            }
            continue;
        }
        // `unpack_in` refuses paths that leave `rootfs`.
        entry.unpack_in(rootfs)?;
    }
    Ok(())
}

fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::image::{ImageSpec, write};
    use crate::layer::{Entry, build};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn layers_are_applied_in_order_with_modes_and_whiteouts() {
        let dir =
            std::env::temp_dir().join(format!("airunway-images-unpack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let layout = Layout::create(&dir.join("layout")).unwrap();
        let base = build(
            &[
                Entry::file("etc/passwd", 0o644, b"base".to_vec()),
                Entry::file("etc/gone", 0o644, b"x".to_vec()),
                Entry::dir("tmp", 0o1777),
            ],
            7,
        )
        .unwrap();
        let top = build(
            &[
                Entry::file("usr/local/bin/app", 0o755, b"app".to_vec()),
                Entry::file("etc/.wh.gone", 0o644, Vec::new()),
                Entry::file("etc/passwd", 0o600, b"top".to_vec()),
            ],
            7,
        )
        .unwrap();
        let spec = ImageSpec {
            entrypoint: vec!["/usr/local/bin/app".into()],
            user: Some("65532:65532".into()),
            layers: vec![(base, "base".into()), (top, "top".into())],
            ..ImageSpec::default()
        };
        write(&layout, "t", &spec).unwrap();
        let rootfs = dir.join("rootfs");
        let config = unpack(&layout, "t", &rootfs, false).unwrap();
        assert_eq!(
            config.config().as_ref().unwrap().user().as_deref(),
            Some("65532:65532")
        );
        assert_eq!(std::fs::read(rootfs.join("etc/passwd")).unwrap(), b"top");
        assert!(!rootfs.join("etc/gone").exists());
        assert!(!rootfs.join("etc/.wh.gone").exists());
        let mode = |p: &str| {
            std::fs::metadata(rootfs.join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("usr/local/bin/app"), 0o755);
        assert_eq!(mode("etc/passwd"), 0o600);
        assert_eq!(mode("tmp"), 0o1777);
        assert!(unpack(&layout, "missing", &rootfs, false).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
