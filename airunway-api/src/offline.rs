//! What the offline commands share (feature `offline`; docs/gitops.md): `airunway-core
//! validate|select|explain` and every provider binary's `render` read the same inputs (YAML or
//! JSON files, multi-document files, directories, `-` for stdin), report findings the same way
//! (`file:document: field: message`, or JSON/YAML) and exit with the same codes ([`exit`]).
//! Nothing here talks to a cluster; the decisions themselves are the controllers' own pure
//! functions, called by the commands.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// The exit codes of every offline command.
pub mod exit {
    /// Every document passed.
    pub const CLEAN: i32 = 0;
    /// At least one finding of severity `error` (validation error, no provider, render refused).
    pub const FINDINGS: i32 = 1;
    /// The command line is wrong or an input cannot be read or parsed.
    pub const USAGE: i32 = 2;
}

/// How results are printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// One line per finding (`file:document: field: message`) or a table.
    #[default]
    Table,
    /// One JSON document.
    Json,
    /// One YAML document.
    Yaml,
}

/// The inputs and output format every offline command takes.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct InputArgs {
    /// Files or directories to read (`-`: stdin); directories are read recursively for
    /// `*.yaml`, `*.yml` and `*.json`, in name order.
    #[arg(value_name = "FILE")]
    pub paths: Vec<PathBuf>,

    /// More files or directories, as `kubectl -f` takes them.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filenames: Vec<PathBuf>,

    /// Output format: `table` (human), `json` or `yaml`.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: OutputFormat,

    /// The namespace of documents that name none (as `kubectl apply` would put them).
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
}

impl InputArgs {
    /// Every path given, positional first.
    pub fn all_paths(&self) -> Vec<PathBuf> {
        self.paths.iter().chain(&self.filenames).cloned().collect()
    }

    /// The documents of every path given (see [`read_documents`]), namespaced.
    pub fn read(&self) -> Result<Vec<Document>, InputError> {
        let mut documents = read_documents(&self.all_paths())?;
        for document in &mut documents {
            document.default_namespace(&self.namespace);
        }
        Ok(documents)
    }
}

/// Why the inputs could not be read (exit code [`exit::USAGE`]).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// No file was given.
    #[error("no input: give files, directories, or - for stdin")]
    NoInput,
    /// A file or directory could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not YAML (or JSON).
    #[error("{path}: not YAML: {message}")]
    Parse {
        /// The path.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// The result could not be written.
    #[error("writing the output: {0}")]
    Output(String),
}

impl InputError {
    /// A short, static label.
    pub fn category(&self) -> &'static str {
        match self {
            InputError::NoInput => "no_input",
            InputError::Read { .. } => "read",
            InputError::Parse { .. } => "parse",
            InputError::Output(_) => "output",
        }
    }
}

/// One document of an input file.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// The file it came from (`-` for stdin).
    pub file: String,
    /// Its position in the file (0-based, counting empty documents).
    pub index: usize,
    /// The line of the file it starts on (1-based).
    pub line: usize,
    /// The document.
    pub value: Value,
}

impl Document {
    /// `apiVersion` and `kind`.
    pub fn kind(&self) -> (&str, &str) {
        (
            self.value["apiVersion"].as_str().unwrap_or_default(),
            self.value["kind"].as_str().unwrap_or_default(),
        )
    }

    /// Whether it is an AI Runway object of `kind` (`airunway.ai/*`).
    pub fn is(&self, kind: &str) -> bool {
        let (api_version, own) = self.kind();
        own == kind && api_version.starts_with(&format!("{}/", crate::constants::GROUP))
    }

    /// `metadata.name` (empty when missing).
    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// Sets `metadata.namespace` when the document is an object without one (cluster-scoped
    /// kinds included: their namespace is never read).
    pub fn default_namespace(&mut self, namespace: &str) {
        if let Some(metadata) = self.value.as_object_mut().map(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()))
        }) && let Some(metadata) = metadata.as_object_mut()
            && !metadata.get("namespace").is_some_and(Value::is_string)
        {
            metadata.insert("namespace".into(), Value::String(namespace.to_string()));
        }
    }

    /// The location for messages, `file:index`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.index)
    }
}

/// The documents of `paths` in order: files, directories (recursively, `*.yaml`, `*.yml` and
/// `*.json` in name order) and `-` (stdin, read once). Empty documents are skipped (their
/// index still counts).
pub fn read_documents(paths: &[PathBuf]) -> Result<Vec<Document>, InputError> {
    if paths.is_empty() {
        return Err(InputError::NoInput);
    }
    let mut documents = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
                InputError::Read {
                    path: "-".into(),
                    source,
                }
            })?;
            documents.extend(parse_documents("-", &text)?);
            continue;
        }
        for file in files_of(path)? {
            let name = file.display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|source| InputError::Read {
                path: name.clone(),
                source,
            })?;
            documents.extend(parse_documents(&name, &text)?);
        }
    }
    Ok(documents)
}

/// The documents of one file's text (YAML, which JSON is too), named `file`. Documents are
/// counted as they are separated (`---` at the start of a line): a leading separator opens the
/// first document, and an empty document is skipped but counted.
pub fn parse_documents(file: &str, text: &str) -> Result<Vec<Document>, InputError> {
    let mut documents = Vec::new();
    for (index, (line, chunk)) in split_documents(text).into_iter().enumerate() {
        let value: Value = serde_saphyr::from_str(chunk).map_err(|e| InputError::Parse {
            path: format!("{file}:{index} (line {line})"),
            message: e.to_string(),
        })?;
        if !value.is_null() {
            documents.push(Document {
                file: file.to_string(),
                index,
                line,
                value,
            });
        }
    }
    Ok(documents)
}

/// The documents of a YAML stream with the line each starts on (1-based): split at `---` lines
/// (and `--- ` followed by content); the text before a first separator is a document only when
/// it holds more than comments and blank lines; a `...` line ends a document.
fn split_documents(text: &str) -> Vec<(usize, &str)> {
    let mut chunks: Vec<(usize, usize, usize)> = Vec::new(); // (line, start, end)
    let mut start = 0;
    let mut start_line = 1;
    let mut offset = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let separator = trimmed == "---" || trimmed.starts_with("--- ");
        if separator || trimmed == "..." {
            if separator {
                chunks.push((start_line, start, offset));
                // Content after `--- ` on the same line belongs to the next document.
                start = offset + 3;
                start_line = number + 1;
            } else {
                chunks.push((start_line, start, offset));
                start = offset + line.len();
                start_line = number + 2;
            }
        }
        offset += line.len();
    }
    chunks.push((start_line, start, text.len()));
    let blank = |chunk: &str| {
        chunk
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    };
    let mut out: Vec<(usize, &str)> = chunks
        .into_iter()
        .map(|(line, s, e)| (line, text.get(s..e).unwrap_or_default()))
        .collect();
    if out.len() > 1 && out.first().is_some_and(|(_, c)| blank(c)) {
        out.remove(0);
    }
    // A `...` end marker followed only by blank text adds no document.
    if out.len() > 1 && out.last().is_some_and(|(_, c)| blank(c)) {
        out.pop();
    }
    out
}

/// The files of `path`: itself, or the YAML and JSON files under a directory, sorted.
fn files_of(path: &Path) -> Result<Vec<PathBuf>, InputError> {
    let read_error = |source| InputError::Read {
        path: path.display().to_string(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(read_error)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    entries.sort();
    let mut files = Vec::new();
    for entry in entries {
        if entry.is_dir() {
            files.extend(files_of(&entry)?);
        } else if entry
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            files.push(entry);
        }
    }
    Ok(files)
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The cluster would refuse it (or the deployment could not run): exit code 1.
    Error,
    /// The cluster would admit it with this warning.
    Warning,
}

/// One finding about one document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file (`-`: stdin).
    pub file: String,
    /// The document's position in the file (0-based).
    pub document: usize,
    /// The line the document starts on (1-based).
    pub line: usize,
    /// The document's kind.
    pub kind: String,
    /// The document's `metadata.name`.
    pub name: String,
    /// Error or warning.
    pub severity: Severity,
    /// The field path (`spec.resources.gpu.count`); empty for the whole document.
    pub field: String,
    /// What the cluster (or the controller) says.
    pub message: String,
}

impl Finding {
    /// A finding about `document`.
    pub fn new(
        document: &Document,
        severity: Severity,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            file: document.file.clone(),
            document: document.index,
            line: document.line,
            kind: document.kind().1.to_string(),
            name: document.name().to_string(),
            severity,
            field: field.into(),
            message: message.into(),
        }
    }

    /// `file:document: field: message` (`warning: ` before a warning's field).
    pub fn line(&self) -> String {
        let severity = match self.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        let field = if self.field.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.field)
        };
        format!(
            "{}:{}: {severity}{field}{}",
            self.file, self.document, self.message
        )
    }
}

/// [`exit::FINDINGS`] when any finding is an error, else [`exit::CLEAN`].
pub fn exit_code(findings: &[Finding]) -> i32 {
    if findings.iter().any(|f| f.severity == Severity::Error) {
        exit::FINDINGS
    } else {
        exit::CLEAN
    }
}

/// `value` as `format` (`human` gives the table form).
pub fn format<T: Serialize>(
    value: &T,
    format: OutputFormat,
    human: impl FnOnce() -> String,
) -> Result<String, InputError> {
    match format {
        OutputFormat::Table => Ok(human()),
        OutputFormat::Json => serde_json::to_string_pretty(value)
            .map(|mut text| {
                text.push('\n');
                text
            })
            .map_err(|e| InputError::Output(e.to_string())),
        OutputFormat::Yaml => to_yaml(value),
    }
}

/// `value` as YAML.
pub fn to_yaml<T: Serialize>(value: &T) -> Result<String, InputError> {
    serde_saphyr::to_string(value).map_err(|e| InputError::Output(e.to_string()))
}

/// Rows as columns separated by at least two spaces (the first row is the header; empty
/// cells print as `-`).
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let cell = |row: &Vec<String>, i: usize| -> String {
        match row.get(i).map(String::as_str) {
            None | Some("") => "-".to_string(),
            Some(text) => text.to_string(),
        }
    };
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .map(|r| cell(r, i).chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, width) in widths.iter().enumerate() {
            let text = cell(row, i);
            if i + 1 == columns {
                line.push_str(&text);
            } else {
                line.push_str(&format!("{text:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_keep_their_file_and_index() {
        let docs = parse_documents(
            "f.yaml",
            "---\n# empty\n---\nkind: A\n---\nkind: B\ntext: |\n  --- not a separator\n",
        )
        .unwrap();
        let found: Vec<(usize, usize, &str)> =
            docs.iter().map(|d| (d.index, d.line, d.kind().1)).collect();
        assert_eq!(found, [(1, 3, "A"), (2, 5, "B")]);
        assert_eq!(docs[1].value["text"], json!("--- not a separator\n"));
        let one = parse_documents("g.yaml", "# header\nkind: A\n").unwrap();
        assert_eq!((one[0].index, one[0].line), (0, 1));
        assert_eq!(docs[1].location(), "f.yaml:2");
        let error = parse_documents("bad.yaml", "a: [").unwrap_err();
        assert_eq!(error.category(), "parse");
    }

    #[test]
    fn directories_are_read_recursively_in_order() {
        let dir = std::env::temp_dir().join(format!("airunway-offline-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("b.yaml"), "kind: B\n").unwrap();
        std::fs::write(dir.join("a.json"), "{\"kind\": \"A\"}").unwrap();
        std::fs::write(dir.join("notes.txt"), "kind: X\n").unwrap();
        std::fs::write(dir.join("sub/c.yml"), "kind: C\n").unwrap();
        let docs = read_documents(std::slice::from_ref(&dir)).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d.kind().1).collect();
        assert_eq!(kinds, ["A", "B", "C"]);
        assert_eq!(
            read_documents(&[dir.join("missing.yaml")])
                .unwrap_err()
                .category(),
            "read"
        );
        assert_eq!(read_documents(&[]).unwrap_err().category(), "no_input");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn findings_print_file_document_field_and_message() {
        let mut doc = parse_documents(
            "m.yaml",
            "apiVersion: airunway.ai/v1alpha1\nkind: ModelDeployment\nmetadata: {name: m}\n",
        )
        .unwrap()
        .remove(0);
        doc.default_namespace("ns");
        assert_eq!(doc.value["metadata"]["namespace"], json!("ns"));
        assert!(doc.is("ModelDeployment"));
        let error = Finding::new(&doc, Severity::Error, "spec.model", "Required value");
        assert_eq!(error.line(), "m.yaml:0: spec.model: Required value");
        let warning = Finding::new(&doc, Severity::Warning, "", "careful");
        assert_eq!(warning.line(), "m.yaml:0: warning: careful");
        assert_eq!(exit_code(std::slice::from_ref(&warning)), exit::CLEAN);
        assert_eq!(exit_code(&[warning, error]), exit::FINDINGS);
    }

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["NAME".to_string(), "PROVIDER".to_string()],
            vec!["a-long-name".to_string(), String::new()],
        ];
        assert_eq!(table(&rows), "NAME         PROVIDER\na-long-name  -\n");
    }
}
