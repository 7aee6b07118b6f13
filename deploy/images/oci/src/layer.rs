//! Deterministic layers: a tar archive of the entries given, sorted by path, each with owner
//! 0:0, its fixed mode and one mtime (SOURCE_DATE_EPOCH), every missing parent directory added
//! (0755), then gzip with a fixed header (no name, no time). The same entries and mtime always
//! give the same bytes, so the same digests.

use std::collections::BTreeMap;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::{Error, Result, sha256_digest};

/// What an entry of a layer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A directory.
    Dir,
    /// A regular file with these bytes.
    File(Vec<u8>),
}

/// One file or directory of a layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path inside the image, relative to its root (`etc/passwd`; no leading `/`).
    pub path: String,
    /// The permission bits (with the sticky bit, e.g. `0o1777` for `/tmp`).
    pub mode: u32,
    /// A directory or a file's bytes.
    pub content: Content,
}

impl Entry {
    /// A directory entry.
    pub fn dir(path: &str, mode: u32) -> Entry {
        Entry {
            path: path.trim_matches('/').to_string(),
            mode,
            content: Content::Dir,
        }
    }

    /// A regular file entry.
    pub fn file(path: &str, mode: u32, bytes: Vec<u8>) -> Entry {
        Entry {
            path: path.trim_matches('/').to_string(),
            mode,
            content: Content::File(bytes),
        }
    }
}

/// A layer as a blob of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The gzip-compressed tar archive (the blob).
    pub blob: Vec<u8>,
    /// The digest of the blob (the manifest's layer descriptor).
    pub digest: String,
    /// The digest of the uncompressed tar archive (the configuration's `rootfs.diff_ids`).
    pub diff_id: String,
}

/// Builds the layer of `entries` with every mtime `mtime` (seconds since the epoch).
pub fn build(entries: &[Entry], mtime: u64) -> Result<Layer> {
    // Sorted by path, parents first, each path once; missing parents become 0755 directories.
    let mut sorted: BTreeMap<String, &Entry> = BTreeMap::new();
    let mut parents: Vec<String> = Vec::new();
    for entry in entries {
        if entry.path.is_empty() || entry.path.split('/').any(|c| c.is_empty() || c == "..") {
            return Err(Error::Input(format!(
                "layer entry path {:?} is not a relative path",
                entry.path
            )));
        }
        if sorted.insert(entry.path.clone(), entry).is_some() {
            return Err(Error::Input(format!(
                "layer entry {} given twice",
                entry.path
            )));
        }
        let mut parent = entry.path.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            parents.push(up.to_string());
            parent = up;
        }
    }
    let default_dir = Entry::dir("", 0o755);
    for parent in parents {
        sorted.entry(parent).or_insert(&default_dir);
    }

    let mut builder = tar::Builder::new(Vec::new());
    for (path, entry) in &sorted {
        let mut header = tar::Header::new_ustar();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        header.set_mode(entry.mode);
        let result = match &entry.content {
            Content::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                builder.append_data(&mut header, path, std::io::empty())
            }
            Content::File(bytes) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(bytes.len() as u64);
                builder.append_data(&mut header, path, bytes.as_slice())
            }
        };
        result.map_err(|e| Error::Input(format!("adding {path} to a layer: {e}")))?;
    }
    let tar = builder
        .into_inner()
        .map_err(|e| Error::Input(format!("finishing a layer: {e}")))?;
    let diff_id = sha256_digest(&tar);
    // GzEncoder writes a header with mtime 0, no file name and "unknown" OS: fixed bytes.
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    let compressed = gzip
        .write_all(&tar)
        .and_then(|()| gzip.finish())
        .map_err(|e| Error::Input(format!("compressing a layer: {e}")))?;
    Ok(Layer {
        digest: sha256_digest(&compressed),
        blob: compressed,
        diff_id,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Read;

    fn entries() -> Vec<Entry> {
        vec![
            Entry::file("usr/local/bin/tool", 0o755, b"#!binary".to_vec()),
            Entry::dir("tmp", 0o1777),
            Entry::file("etc/passwd", 0o644, b"root:x:0:0::/:\n".to_vec()),
        ]
    }

    /// (path, mode, uid, gid, mtime, size) of every entry of a layer, in archive order.
    fn listing(layer: &Layer) -> Vec<(String, u32, u64, u64, u64, u64)> {
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(layer.blob.as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        assert_eq!(sha256_digest(&tar), layer.diff_id);
        let mut archive = tar::Archive::new(tar.as_slice());
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    h.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                    h.gid().unwrap(),
                    h.mtime().unwrap(),
                    h.size().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn the_same_entries_give_the_same_bytes_in_any_order() {
        let a = build(&entries(), 1_700_000_000).unwrap();
        let mut reversed = entries();
        reversed.reverse();
        let b = build(&reversed, 1_700_000_000).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.digest, sha256_digest(&a.blob));
        // Another mtime is another layer.
        assert_ne!(build(&entries(), 1).unwrap().digest, a.digest);
    }

    #[test]
    fn entries_are_sorted_with_parents_owned_by_root_at_one_mtime() {
        let layer = build(&entries(), 42).unwrap();
        let listing = listing(&layer);
        let paths: Vec<&str> = listing.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            paths,
            [
                "etc",
                "etc/passwd",
                "tmp",
                "usr",
                "usr/local",
                "usr/local/bin",
                "usr/local/bin/tool"
            ]
        );
        let modes: Vec<u32> = listing.iter().map(|e| e.1).collect();
        assert_eq!(modes, [0o755, 0o644, 0o1777, 0o755, 0o755, 0o755, 0o755]);
        assert!(listing.iter().all(|e| (e.2, e.3, e.4) == (0, 0, 42)));
        assert_eq!(listing[6].5, 8);
    }

    #[test]
    fn the_gzip_header_carries_no_time_or_name() {
        let layer = build(&entries(), 42).unwrap();
        // Magic, deflate, no flags (no name), mtime 0.
        assert_eq!(&layer.blob[..8], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn bad_paths_and_duplicates_are_refused() {
        assert!(build(&[Entry::dir("a/../b", 0o755)], 0).is_err());
        assert!(build(&[Entry::dir("", 0o755)], 0).is_err());
        assert!(build(&[Entry::dir("a", 0o755), Entry::dir("/a/", 0o700)], 0).is_err());
    }
}
