//! Throughput on loopback: the downloader against `curl`, fetching the same files from the same
//! local server (the tests' Hub server) in the same run.
//!
//! `cargo run --release -p airunway-model-downloader --example throughput`
//! (`-- --large-mib 1024 --small-files 500 --small-kib 512 --rounds 3`).
//! Prints MB/s (10^6 bytes per second) of the best round of each and the ratio.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use airunway_model_downloader::fetch::{RetryPolicy, Timeouts};
use airunway_model_downloader::hub::FileFilter;
use airunway_model_downloader::{Config, Source, run};
use clap::Parser;
use common::{Content, Hub};

/// Benchmark settings.
#[derive(Debug, Parser)]
struct Args {
    /// Size of the one large file, MiB.
    #[arg(long, default_value_t = 1024)]
    large_mib: u64,
    /// Number of small files.
    #[arg(long, default_value_t = 500)]
    small_files: usize,
    /// Size of each small file, KiB.
    #[arg(long, default_value_t = 512)]
    small_kib: u64,
    /// Files at once, for both the downloader and `curl --parallel`.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// Rounds of each measurement (the best is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// List the files without LFS hashes: nothing to verify (and no redirect), for both.
    #[arg(long)]
    no_lfs: bool,
    /// Directory for the downloaded files (emptied after each round).
    #[arg(long, default_value = "target/throughput")]
    dir: std::path::PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The server on its own runtime (2 threads), the downloader on another (as in its own process).
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    let mut files: Vec<(String, Content, bool)> = vec![(
        "large/model.safetensors".into(),
        Content::Generated {
            size: args.large_mib << 20,
            seed: 7,
        },
        true,
    )];
    for i in 0..args.small_files {
        files.push((
            format!("small/shard-{i:05}.bin"),
            Content::Generated {
                size: args.small_kib << 10,
                seed: (i % 251) as u8,
            },
            !args.no_lfs,
        ));
    }
    let names: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    let hub = Hub::new(
        files
            .iter()
            .map(|(p, c, l)| (p.as_str(), c.clone(), *l))
            .collect(),
    );
    let server = server_rt.block_on(common::start(hub));
    let small_bytes = args.small_files as u64 * (args.small_kib << 10);
    let large_bytes = args.large_mib << 20;
    println!(
        "server {} | one large file {} MiB | {} small files of {} KiB ({} MiB) | parallel {} | best of {}",
        server.endpoint,
        args.large_mib,
        args.small_files,
        args.small_kib,
        small_bytes >> 20,
        args.parallel,
        args.rounds
    );

    std::fs::create_dir_all(&args.dir)?;
    let mut rows = Vec::new();
    for (label, include, bytes) in [
        ("one large file", "large/*", large_bytes),
        ("many small files", "small/*", small_bytes),
    ] {
        let mut ours = Duration::MAX;
        let mut curl = Duration::MAX;
        let mut curl_verified = Duration::MAX;
        for _ in 0..args.rounds {
            let dir = args.dir.join("downloader");
            let _ = std::fs::remove_dir_all(&dir);
            let config = Config {
                source: Source::Hub {
                    endpoint: reqwest::Url::parse(&server.endpoint)?,
                    model: "org/model".into(),
                    revision: "main".into(),
                    filter: FileFilter::new(&[include.to_owned()], &[])?,
                },
                target_dir: dir.clone(),
                layout: airunway_model_downloader::Layout::Flat,
                parallel: args.parallel,
                token: None,
                retry: RetryPolicy::default(),
                timeouts: Timeouts::default(),
                progress_interval: Duration::from_secs(5),
            };
            let started = Instant::now();
            let summary = client_rt.block_on(run(config, Vec::new()))?;
            ours = ours.min(started.elapsed());
            anyhow::ensure!(
                summary.bytes_fetched == bytes,
                "downloader fetched {} of {bytes}",
                summary.bytes_fetched
            );
            std::fs::remove_dir_all(&dir)?;

            let dir = args.dir.join("curl");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            let wanted: Vec<&String> = names
                .iter()
                .filter(|n| n.starts_with(&include[..include.len() - 1]))
                .collect();
            let elapsed = run_curl(&server.endpoint, &wanted, &dir, args.parallel)?;
            curl = curl.min(elapsed);
            // The same verification the downloader does: the sha256 of every file.
            let started = Instant::now();
            let status = std::process::Command::new("sha256sum")
                .args(wanted.iter().map(|n| dir.join(n.replace('/', "_"))))
                .stdout(std::process::Stdio::null())
                .status()?;
            anyhow::ensure!(status.success(), "sha256sum failed: {status}");
            curl_verified = curl_verified.min(elapsed + started.elapsed());
            let fetched: u64 = wanted
                .iter()
                .map(|n| {
                    std::fs::metadata(dir.join(n.replace('/', "_")))
                        .map(|m| m.len())
                        .unwrap_or(0)
                })
                .sum();
            anyhow::ensure!(fetched == bytes, "curl fetched {fetched} of {bytes}");
            std::fs::remove_dir_all(&dir)?;
        }
        let mbs = move |d: Duration| bytes as f64 / d.as_secs_f64() / 1e6;
        rows.push((label, ours, curl, curl_verified, mbs));
    }
    println!(
        "{:<18} {:>18} {:>18} {:>7} {:>22} {:>7}",
        "case", "downloader MB/s", "curl MB/s", "ratio", "curl+sha256sum MB/s", "ratio"
    );
    for (label, ours, curl, verified, mbs) in rows {
        println!(
            "{label:<18} {:>10.0} ({:>5.2}s) {:>10.0} ({:>5.2}s) {:>6.0}% {:>14.0} ({:>5.2}s) {:>6.0}%",
            mbs(ours),
            ours.as_secs_f64(),
            mbs(curl),
            curl.as_secs_f64(),
            mbs(ours) / mbs(curl) * 100.0,
            mbs(verified),
            verified.as_secs_f64(),
            mbs(ours) / mbs(verified) * 100.0,
        );
    }
    drop(server);
    Ok(())
}

/// `curl` fetching the files (following the Hub's redirects), `parallel` at once, into `dir`.
fn run_curl(
    endpoint: &str,
    files: &[&String],
    dir: &Path,
    parallel: usize,
) -> anyhow::Result<Duration> {
    let mut config = String::new();
    for name in files {
        config.push_str(&format!(
            "url = \"{endpoint}/org/model/resolve/{}/{name}\"\noutput = \"{}\"\n",
            common::COMMIT,
            dir.join(name.replace('/', "_")).display()
        ));
    }
    let config_path = dir.join("curl.config");
    std::fs::write(&config_path, config)?;
    let started = Instant::now();
    let status = std::process::Command::new("curl")
        .args([
            "--silent",
            "--no-progress-meter",
            "--show-error",
            "--fail",
            "--location",
            "--parallel",
            "--parallel-max",
        ])
        .arg(parallel.to_string())
        .arg("--config")
        .arg(&config_path)
        .status()?;
    let elapsed = started.elapsed();
    anyhow::ensure!(status.success(), "curl failed: {status}");
    std::fs::remove_file(&config_path)?;
    Ok(elapsed)
}
