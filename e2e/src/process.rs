//! Child processes of the harness.
//!
//! Processes tied to the test process die with it, whatever way it ends:
//! - normal exit: an `atexit` handler kills every registered child and removes registered
//!   temporary directories;
//! - panic in a test: the harness keeps running, the process exits normally afterwards (above);
//! - Ctrl-C: children share the terminal's foreground process group and get the SIGINT too;
//! - SIGKILL of the test process: every child was started with `PR_SET_PDEATHSIG(SIGKILL)` from
//!   one long-lived spawner thread (the death signal fires when the *spawning thread* exits, so
//!   that thread never exits before the process does).
//!
//! Detached processes (the sandbox) get their own process group and outlive the launcher; they
//! are stopped by process group id.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

/// A signal the harness sends to its processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: stop gracefully.
    Term,
    /// SIGKILL: `kill -9`.
    Kill,
}

impl Signal {
    fn number(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// kill(2): sends `signal` (or, with `None`, only checks that the process exists) to `pid`;
/// a negative `pid` addresses the process group `-pid`. Whether it was delivered.
fn send(pid: i32, signal: Option<Signal>) -> bool {
    // A pid of 0 or -1 would address our own group or every process we may signal.
    if pid == 0 || pid == -1 {
        return false;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of this process.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, signal.map_or(0, Signal::number)) };
    rc == 0
}

/// How long a started process lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Killed when the test process ends (normally, by panic, Ctrl-C or SIGKILL).
    WithTestProcess,
    /// Its own process group; survives the launcher (the sandbox).
    Detached,
}

/// What to start.
#[derive(Clone, Debug)]
pub struct Spawn {
    /// A short name for logs and messages.
    pub name: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: BTreeMap<String, String>,
    /// File that receives stdout and stderr.
    pub log: PathBuf,
    /// Lifetime.
    pub lifetime: Lifetime,
}

/// A started process.
#[derive(Debug)]
pub struct ProcessHandle {
    name: String,
    pid: u32,
    log: PathBuf,
    child: Mutex<Option<Child>>,
    lifetime: Lifetime,
}

struct Registry {
    pids: Vec<u32>,
    dirs: Vec<PathBuf>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        install_exit_hook();
        Mutex::new(Registry {
            pids: Vec::new(),
            dirs: Vec::new(),
        })
    })
}

extern "C" fn cleanup_at_exit() {
    let Ok(registry) = registry().lock() else {
        return;
    };
    for pid in &registry.pids {
        let _ = send(*pid as i32, Some(Signal::Kill));
    }
    for dir in &registry.dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn install_exit_hook() {
    // SAFETY: `atexit` only stores the function pointer; `cleanup_at_exit` is a plain
    // `extern "C" fn` that never unwinds across the FFI boundary.
    #[allow(unsafe_code)]
    unsafe {
        libc_atexit(cleanup_at_exit);
    }
}

#[allow(unsafe_code)]
unsafe extern "C" {
    #[link_name = "atexit"]
    fn libc_atexit(callback: extern "C" fn()) -> i32;
}

/// Removes `dir` when the test process exits.
pub fn remove_at_exit(dir: &Path) {
    if let Ok(mut registry) = registry().lock() {
        registry.dirs.push(dir.to_path_buf());
    }
}

type SpawnReply = mpsc::Sender<std::io::Result<Child>>;

/// The long-lived thread every tied child is spawned from (see the module docs).
fn spawner() -> &'static Mutex<mpsc::Sender<(Command, SpawnReply)>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<(Command, SpawnReply)>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<(Command, SpawnReply)>();
        std::thread::Builder::new()
            .name("airunway-e2e-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
                // The channel's sender lives in a static: this loop only ends at process exit.
                loop {
                    std::thread::park();
                }
            })
            .map(|_| ())
            .unwrap_or_else(|e| eprintln!("cannot start the spawner thread: {e}"));
        Mutex::new(tx)
    })
}

impl Spawn {
    /// Starts the process.
    pub fn start(self) -> Result<ProcessHandle> {
        if let Some(dir) = self.log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let log =
            File::create(&self.log).with_context(|| format!("creating {}", self.log.display()))?;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env_remove("HTTPS_PROXY")
            .env_remove("HTTP_PROXY")
            .env_remove("https_proxy")
            .env_remove("http_proxy")
            // After the defaults: a component may be given a proxy of its own.
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = match self.lifetime {
            Lifetime::Detached => {
                use std::os::unix::process::CommandExt;
                command.process_group(0);
                command.spawn()
            }
            Lifetime::WithTestProcess => {
                use std::os::unix::process::CommandExt;
                // SAFETY: the closure runs between fork and exec and only makes the
                // async-signal-safe prctl(2) call.
                #[allow(unsafe_code)]
                unsafe {
                    command.pre_exec(|| {
                        // prctl(2) PR_SET_PDEATHSIG: SIGKILL when the spawning thread ends.
                        let signal = libc::SIGKILL as libc::c_ulong;
                        if libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) == 0 {
                            Ok(())
                        } else {
                            Err(std::io::Error::last_os_error())
                        }
                    });
                }
                let (reply_tx, reply_rx) = mpsc::channel();
                spawner()
                    .lock()
                    .map_err(|_| anyhow!("spawner lock poisoned"))?
                    .send((command, reply_tx))
                    .map_err(|_| anyhow!("the spawner thread is gone"))?;
                reply_rx
                    .recv()
                    .map_err(|_| anyhow!("the spawner thread is gone"))?
            }
        }
        .with_context(|| format!("starting {} ({})", self.name, self.program.display()))?;
        let pid = child.id();
        if self.lifetime == Lifetime::WithTestProcess
            && let Ok(mut registry) = registry().lock()
        {
            registry.pids.push(pid);
        }
        Ok(ProcessHandle {
            name: self.name,
            pid,
            log: self.log,
            child: Mutex::new(Some(child)),
            lifetime: self.lifetime,
        })
    }
}

impl ProcessHandle {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The short name given at start.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The log file (stdout and stderr).
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Whether the process has exited (its exit status, if so).
    pub fn exit_status(&self) -> Option<std::process::ExitStatus> {
        let mut guard = self.child.lock().ok()?;
        guard.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: Signal) {
        let _ = send(self.pid as i32, Some(signal));
    }

    /// SIGTERM, then waits up to `grace` for the exit, then SIGKILL. Returns the exit status.
    pub fn terminate(&self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.signal(Signal::Term);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill()
    }

    /// SIGKILL (`kill -9`) and reap.
    pub fn kill(&self) -> Option<std::process::ExitStatus> {
        self.signal(Signal::Kill);
        let mut guard = self.child.lock().ok()?;
        guard.as_mut().and_then(|c| c.wait().ok())
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        if self.lifetime == Lifetime::WithTestProcess && self.exit_status().is_none() {
            let _ = self.kill();
        }
    }
}

/// Stops a detached process group: SIGTERM, then SIGKILL after `grace`.
pub fn stop_process_group(pgid: i32, grace: Duration) {
    if pgid <= 1 {
        return;
    }
    let group = -pgid;
    if !send(group, Some(Signal::Term)) {
        return;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !send(group, None) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = send(group, Some(Signal::Kill));
}

/// Whether a process with this id exists.
pub fn is_alive(pid: i32) -> bool {
    pid > 0 && send(pid, None)
}

/// The last `lines` lines of a file (empty if unreadable).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
