//! The tool as `deploy/images/build` and the e2e harness run it: a product image built twice
//! from the same inputs has the same digest (and the layouts the same bytes), `digest` reads it
//! back, `push` to another layout keeps it, `unpack` gives the root filesystem and the
//! configuration. Running it here also makes `cargo test --workspace --no-run` build the binary
//! the script uses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_airunway-images"))
        .args(args)
        .output()
        .expect("starting airunway-images");
    assert!(
        output.status.success(),
        "airunway-images {args:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("airunway-images-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn build(dir: &Path, layout: &str, binary: &Path, ca: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    tool(&[
        "build",
        "--layout",
        dir.join(layout).to_str().unwrap(),
        "--name",
        "airunway-core",
        "--version",
        "0.1.0",
        "--crate-dir",
        "core-controller",
        "--binary",
        binary.to_str().unwrap(),
        "--passwd",
        root.join("rootfs/etc/passwd").to_str().unwrap(),
        "--group",
        root.join("rootfs/etc/group").to_str().unwrap(),
        "--ca-bundle",
        ca.to_str().unwrap(),
        "--ca-version",
        "test",
        "--epoch",
        "1735787045",
        "--revision",
        "0123abc",
        "--source",
        "https://github.com/airunway/airunway",
    ])
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn build_digest_push_and_unpack_a_product_image() {
    let dir = scratch("build");
    let binary = dir.join("airunway-core");
    std::fs::write(&binary, b"\x7fELF not really a program").unwrap();
    let ca = dir.join("ca.crt");
    std::fs::write(&ca, b"-----BEGIN CERTIFICATE-----\n").unwrap();

    // Reproducible: the same inputs, the same digest and the same files.
    let first = build(&dir, "a", &binary, &ca);
    assert!(first.starts_with("sha256:") && first.len() == 71, "{first}");
    let second = build(&dir, "b", &binary, &ca);
    assert_eq!(first, second);
    assert_eq!(files(&dir.join("a")), files(&dir.join("b")));
    // Built again over an existing layout: the same layout (nothing left from before).
    assert_eq!(build(&dir, "a", &binary, &ca), first);
    assert_eq!(files(&dir.join("a")), files(&dir.join("b")));
    // Three blobs and the manifest: the two layers, the config.
    assert_eq!(
        std::fs::read_dir(dir.join("a/blobs/sha256"))
            .unwrap()
            .count(),
        4
    );

    let layout = format!("oci:{}:0.1.0", dir.join("a").display());
    assert_eq!(tool(&["digest", &layout]), first);

    // Pushed into another layout (what AIRUNWAY_PUSH_TRANSPORT=oci: does): the same digest.
    let pushed = format!("oci:{}:0.1.0", dir.join("registry/airunway-core").display());
    assert_eq!(tool(&["push", &layout, &pushed]), first);
    assert_eq!(tool(&["digest", &pushed]), first);
    assert_eq!(tool(&["manifest", &pushed]), tool(&["manifest", &layout]));

    // Unpacked: the files of both layers with their modes, and the configuration.
    let bundle = dir.join("bundle");
    tool(&[
        "unpack",
        "--owners",
        "false",
        &layout,
        bundle.to_str().unwrap(),
    ]);
    let rootfs = bundle.join("rootfs");
    let mode = |p: &str| {
        std::fs::metadata(rootfs.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("usr/local/bin/airunway-core"), 0o755);
    assert_eq!(mode("tmp"), 0o1777);
    assert_eq!(mode("etc/passwd"), 0o644);
    assert_eq!(
        std::fs::read(rootfs.join("etc/ssl/certs/ca-certificates.crt")).unwrap(),
        b"-----BEGIN CERTIFICATE-----\n"
    );
    assert!(
        std::fs::read_to_string(rootfs.join("etc/passwd"))
            .unwrap()
            .contains("65532")
    );
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/usr/local/bin/airunway-core"])
    );
    assert_eq!(config["config"]["User"], "65532:65532");

    // A different binary is a different image.
    std::fs::write(&binary, b"\x7fELF another program").unwrap();
    assert_ne!(build(&dir, "c", &binary, &ca), first);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_ca_bundle_fails_with_a_clear_message() {
    let dir = scratch("ca");
    let binary = dir.join("airunway-core");
    std::fs::write(&binary, b"\x7fELF").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_airunway-images"))
        .args([
            "build",
            "--layout",
            dir.join("l").to_str().unwrap(),
            "--name",
            "x",
            "--version",
            "1",
            "--crate-dir",
            "x",
            "--binary",
            binary.to_str().unwrap(),
            "--ca-bundle",
            dir.join("no-such.crt").to_str().unwrap(),
            "--epoch",
            "0",
            "--revision",
            "r",
            "--source",
            "s",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the CA bundle") && stderr.contains("apt-get install -y ca-certificates"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
