//! The documented examples, run: every `redis-cli` transcript in README.md
//! and docs/*.md is sent to a real server with the module, and the reply
//! must be what the document shows, so the documents cannot drift from the
//! code.
//!
//! A transcript is a fenced code block without a language whose lines start
//! with a prompt, followed by the output the command prints:
//!
//! ```text
//! $ redis-cli BF.RESERVE urls 0.001 10000000
//! OK
//! redis> BF.INFO urls SIZE
//! 1) (integer) 19775456
//! ```
//!
//! - `$ redis-cli [options] args…` is a shell command: it is split into
//!   words as a shell does (quotes, backslashes, `#` comments; pipes,
//!   redirections and substitutions are refused) and run with the real
//!   `redis-cli` against the test's server (`-h` and `-p` as written are
//!   replaced, other options such as `-3` kept).
//! - `redis> command` is a line typed at `redis-cli`'s prompt: it is sent
//!   on `redis-cli`'s standard input, so its quoting is redis-cli's
//!   (`"\x00"` escapes work).
//! - Either way `redis-cli` prints its terminal format (`--no-raw`): `OK`,
//!   `(integer) 1`, `"text"`, `1) …` arrays, `(nil)`, `(error) ERR …`.
//!   The output is compared line by line. An output line that is only
//!   `...` stands for any number of lines (for output that depends on the
//!   machine, such as memory limits).
//!
//! Each document runs on a fresh server (Debian's Redis 7.0, the server the
//! documents describe, whatever `REDIS_SERVER` says), its transcripts in
//! order, so a later example sees the keys an earlier one made. HTML
//! comments before a block change that:
//!
//! - `<!-- docs-test: server ARGS… -->`: a fresh server, loaded with the
//!   module arguments ARGS (none: the defaults), for the next transcript
//!   and the rest of the document;
//! - `<!-- docs-test: skip REASON -->`: the next transcript is not run (the
//!   reason is required; keep these few).
//!
//! A block with a `$` line that is not `redis-cli` (the `ferrobloom` tool,
//! a shell pipeline) must be marked `skip`. docs/cli.md and docs/cluster.md
//! are left out: their examples need the tool's own test setup or a
//! cluster (crates/cli and tests/cluster.rs test those).
mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::{env, fs};

use common::{ModuleKind, Server, ServerOpts};

/// Documents whose examples are not run here, and why.
const LEFT_OUT: &[(&str, &str)] = &[
    (
        "docs/cli.md",
        "the ferrobloom tool's transcripts, tested in crates/cli",
    ),
    (
        "docs/cluster.md",
        "needs a Redis Cluster (tests/cluster.rs)",
    ),
];

/// Fewer commands checked than this means transcripts stopped being found
/// (a changed fence or prompt), not that the documents got shorter: lower
/// it only together with examples removed on purpose.
const MIN_COMMANDS: usize = 70;

/// The server the documents' outputs come from.
const DOCS_SERVER: &str = "/usr/bin/redis-server";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn redis_cli() -> PathBuf {
    env::var_os("REDIS_CLI")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-cli"))
}

/// One command of a transcript and the output the document shows for it.
#[derive(Debug, Clone, PartialEq)]
struct Example {
    /// 1-based line of the command in the document.
    line: usize,
    /// The command line as written, prompt included.
    text: String,
    command: Invocation,
    expected: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Invocation {
    /// `$ redis-cli …`: the words after `redis-cli`.
    Shell(Vec<String>),
    /// `redis> …`: the line typed at the prompt.
    Prompt(String),
}

/// A transcript block with what the markers before it say.
#[derive(Debug, Clone, PartialEq)]
struct Transcript {
    /// 1-based line of the opening fence.
    line: usize,
    examples: Vec<Example>,
    /// `Some(args)`: start a fresh server with these module arguments first.
    server: Option<Vec<String>>,
    /// `Some(reason)`: not run.
    skip: Option<String>,
}

const MARKER_START: &str = "<!-- docs-test:";

/// Splits a shell command line into words as `sh` does for simple
/// commands. Refuses what would need a shell to run (pipes, redirections,
/// substitutions, variables, several commands).
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated '".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated \"".into()),
                        },
                        Some(c @ ('$' | '`')) => {
                            return Err(format!("{c} inside double quotes needs a shell"))
                        }
                        Some(c) => word.push(c),
                        None => return Err("unterminated \"".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("a trailing backslash".into()),
                }
            }
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' | '*' | '?' | '[' => {
                return Err(format!(
                    "unquoted {c} needs a shell (only simple redis-cli commands are run)"
                ))
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The redis-cli options that take a value.
const CLI_OPTIONS_WITH_VALUE: &[&str] = &[
    "-h", "-p", "-s", "-a", "-u", "-n", "-r", "-i", "-d", "-D", "--user", "--pass", "--eval",
];

/// redis-cli's arguments for the test's server: `-h`/`-p` as written are
/// dropped (the server is the test's), other leading options kept.
fn cli_args(words: &[String], port: u16) -> Vec<String> {
    let mut out = vec![
        "--no-raw".to_string(),
        "-h".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string(),
    ];
    let mut i = 0;
    while i < words.len() && words[i].starts_with('-') {
        let takes_value = CLI_OPTIONS_WITH_VALUE.contains(&words[i].as_str());
        if words[i] != "-h" && words[i] != "-p" {
            out.push(words[i].clone());
            if takes_value {
                if let Some(v) = words.get(i + 1) {
                    out.push(v.clone());
                }
            }
        }
        i += if takes_value { 2 } else { 1 };
    }
    out.extend(words[i.min(words.len())..].iter().cloned());
    out
}

/// The directive of a marker line, if it is one.
fn marker(line: &str) -> Option<Result<(String, String), String>> {
    let rest = line.trim().strip_prefix(MARKER_START)?;
    let Some(body) = rest.strip_suffix("-->") else {
        return Some(Err(
            "a docs-test marker must end on its line with -->".into()
        ));
    };
    let body = body.trim();
    let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    Some(Ok((name.to_string(), args.trim().to_string())))
}

/// Finds the transcripts of a document. Errors name the line.
fn parse(text: &str) -> Result<Vec<Transcript>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut server: Option<Vec<String>> = None;
    let mut skip: Option<String> = None;
    let mut marker_line = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(m) = marker(line) {
            let (name, args) = m.map_err(|e| format!("line {}: {e}", i + 1))?;
            match name.as_str() {
                "server" => server = Some(args.split_whitespace().map(str::to_string).collect()),
                "skip" if !args.is_empty() => skip = Some(args),
                "skip" => return Err(format!("line {}: `skip` needs a reason", i + 1)),
                _ => return Err(format!("line {}: unknown docs-test marker {name}", i + 1)),
            }
            marker_line = i + 1;
            i += 1;
            continue;
        }
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let indent = line.len() - trimmed.len();
        let fence = i + 1;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let l = lines[i];
            body.push((i + 1, l.get(indent..).unwrap_or(l.trim_start())));
            i += 1;
        }
        i += 1;
        let is_prompt = |l: &str| l.starts_with("$ ") || l.starts_with("redis> ");
        let transcript = info.trim().is_empty() && body.iter().any(|(_, l)| is_prompt(l));
        if !transcript {
            if marker_line > 0 {
                return Err(format!(
                    "line {marker_line}: docs-test marker before a block that is no transcript (line {fence})"
                ));
            }
            continue;
        }
        let mut examples: Vec<Example> = Vec::new();
        let mut foreign = None;
        for (n, l) in &body {
            if let Some(command) = l.strip_prefix("$ ") {
                let command = command.trim();
                let invocation = match command.strip_prefix("redis-cli") {
                    Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                        shell_words(rest).map(Invocation::Shell)
                    }
                    _ => Err(format!("`{command}` is not a redis-cli command")),
                };
                let invocation = match invocation {
                    Ok(inv) => inv,
                    Err(e) => {
                        foreign.get_or_insert(format!("line {n}: {e}"));
                        Invocation::Shell(Vec::new())
                    }
                };
                examples.push(Example {
                    line: *n,
                    text: l.to_string(),
                    command: invocation,
                    expected: Vec::new(),
                });
            } else if let Some(command) = l.strip_prefix("redis> ") {
                examples.push(Example {
                    line: *n,
                    text: l.to_string(),
                    command: Invocation::Prompt(command.to_string()),
                    expected: Vec::new(),
                });
            } else {
                match examples.last_mut() {
                    Some(e) => e.expected.push(l.to_string()),
                    None => {
                        return Err(format!(
                            "line {n}: output before the first command of the transcript"
                        ))
                    }
                }
            }
        }
        for e in &mut examples {
            while e.expected.last().is_some_and(|l| l.trim().is_empty()) {
                e.expected.pop();
            }
        }
        if let (Some(problem), None) = (&foreign, &skip) {
            return Err(format!(
                "{problem}; only redis-cli transcripts are run: mark the block at line {fence} \
                 with <!-- docs-test: skip REASON -->"
            ));
        }
        out.push(Transcript {
            line: fence,
            examples,
            server: server.take(),
            skip: skip.take(),
        });
        marker_line = 0;
    }
    if marker_line > 0 {
        return Err(format!(
            "line {marker_line}: docs-test marker without a transcript after it"
        ));
    }
    Ok(out)
}

/// Whether `actual` matches `expected`, where an expected line `...`
/// matches any number of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| a == first && matches(rest, more)),
    }
}

/// What redis-cli printed for one example.
struct Output {
    stdout: Vec<String>,
    stderr: String,
}

fn run(example: &Example, port: u16) -> Output {
    let mut cmd = Command::new(redis_cli());
    let input = match &example.command {
        Invocation::Shell(words) => {
            cmd.args(cli_args(words, port));
            None
        }
        Invocation::Prompt(line) => {
            cmd.args(cli_args(&[], port));
            Some(format!("{line}\n"))
        }
    };
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", redis_cli().display()));
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        if let Some(input) = input {
            stdin
                .write_all(input.as_bytes())
                .expect("write to redis-cli");
        }
    }
    let out = child.wait_with_output().expect("redis-cli output");
    Output {
        stdout: String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn start(args: &[String]) -> Server {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .module_args(&args)
            .server_binary(DOCS_SERVER),
    )
}

/// What running one document found.
#[derive(Default)]
struct Report {
    checked: usize,
    skipped_blocks: usize,
    failures: Vec<String>,
}

/// Runs the transcripts of the document `name` (for messages) with text
/// `text`, each document on its own servers.
fn check_document(name: &str, text: &str) -> Report {
    let transcripts = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut report = Report::default();
    let mut server: Option<Server> = None;
    for t in transcripts {
        if let Some(reason) = &t.skip {
            eprintln!("{name}:{}: skipped ({reason})", t.line);
            report.skipped_blocks += 1;
            continue;
        }
        if let Some(args) = &t.server {
            server = Some(start(args));
        }
        let port = server.get_or_insert_with(|| start(&[])).port();
        for e in &t.examples {
            let out = run(e, port);
            report.checked += 1;
            if !matches(&e.expected, &out.stdout) {
                let mut msg = format!("{name}:{}: {}\n  expected:\n", e.line, e.text);
                for l in &e.expected {
                    let _ = writeln!(msg, "    {l}");
                }
                msg.push_str("  actual:\n");
                for l in &out.stdout {
                    let _ = writeln!(msg, "    {l}");
                }
                if !out.stderr.is_empty() {
                    let _ = writeln!(msg, "  stderr: {}", out.stderr.trim_end());
                }
                report.failures.push(msg);
            }
        }
    }
    report
}

/// README.md and every docs/*.md but those left out.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| {
            let rel = p.strip_prefix(root()).expect("under the root");
            !LEFT_OUT.iter().any(|(f, _)| Path::new(f) == rel)
        })
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

#[test]
fn documented_examples_match_a_live_server() {
    for (file, _) in LEFT_OUT {
        assert!(
            root().join(file).is_file(),
            "{file} is left out but does not exist"
        );
    }
    let mut total = 0;
    let mut failures = Vec::new();
    let mut summary = String::new();
    for path in documents() {
        let name = path
            .strip_prefix(root())
            .expect("under the root")
            .display()
            .to_string();
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let report = check_document(&name, &text);
        let _ = writeln!(
            summary,
            "  {name}: {} commands checked, {} blocks skipped",
            report.checked, report.skipped_blocks
        );
        total += report.checked;
        failures.extend(report.failures);
    }
    eprintln!("documented examples:\n{summary}  total: {total} commands checked");
    assert!(
        failures.is_empty(),
        "{} documented example(s) differ from the server's replies:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        total >= MIN_COMMANDS,
        "only {total} documented commands were checked, expected at least {MIN_COMMANDS}:\n{summary}"
    );
}

/// The check can fail: a transcript whose output differs is reported with
/// its document, line, command, and both outputs; a matching one is not.
#[test]
fn a_differing_reply_is_reported() {
    let text = "\
Some text.

```
$ redis-cli -p 6379 BF.ADD k a
(integer) 1
redis> BF.ADD k a
(integer) 1
$ redis-cli BF.MEXISTS k a b
1) (integer) 1
2) (integer) 0
```

<!-- docs-test: server ERROR_RATE 0.1 INITIAL_SIZE 7 -->

```
redis> BF.ADD k a
(integer) 1
redis> BF.INFO k
...
 7) Number of items inserted
 8) (integer) 1
...
$ redis-cli BF.INFO k CAPACITY
1) (integer) 8
```
";
    let report = check_document("example.md", text);
    assert_eq!(report.checked, 6);
    assert_eq!(report.failures.len(), 2, "{:#?}", report.failures);
    assert_eq!(
        report.failures[0],
        "example.md:6: redis> BF.ADD k a\n  expected:\n    (integer) 1\n  actual:\n    (integer) 0\n"
    );
    // A fresh server for the second block, with its load arguments.
    assert_eq!(
        report.failures[1],
        "example.md:23: $ redis-cli BF.INFO k CAPACITY\n  expected:\n    1) (integer) 8\n  actual:\n    1) (integer) 7\n"
    );
}

#[test]
fn markers_and_blocks_are_recognised() {
    let text = "\
<!-- docs-test: skip the output depends on the machine -->
```
$ redis-cli INFO bf
bf_memory_limit:1
```

```sh
$ ls
```

   ```
   redis> PING
   PONG
   ```
";
    let t = parse(text).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[0].skip.as_deref(),
        Some("the output depends on the machine")
    );
    assert_eq!(t[1].skip, None);
    assert_eq!(
        t[1].examples,
        [Example {
            line: 12,
            text: "redis> PING".into(),
            command: Invocation::Prompt("PING".into()),
            expected: vec!["PONG".into()],
        }]
    );
    // Other programs need a skip marker; markers need a transcript.
    let e = parse("```\n$ ferrobloom stats\nok\n```\n").unwrap_err();
    assert!(
        e.contains("not a redis-cli command") && e.contains("skip"),
        "{e}"
    );
    let e = parse("```\n$ redis-cli INFO | grep bf\n```\n").unwrap_err();
    assert!(e.contains("needs a shell"), "{e}");
    let e = parse("<!-- docs-test: skip -->\n```\n$ redis-cli PING\n```\n").unwrap_err();
    assert!(e.contains("reason"), "{e}");
    let e = parse("<!-- docs-test: server -->\n```sh\nredis-cli PING\n```\n").unwrap_err();
    assert!(e.contains("no transcript"), "{e}");
    let e = parse("<!-- docs-test: serve -->\n").unwrap_err();
    assert!(e.contains("unknown"), "{e}");
}

#[test]
fn shell_words_split_as_sh_does() {
    let w = |s: &str| shell_words(s).unwrap();
    assert_eq!(
        w(" BF.ADD  k 'a b' \"c \\\" d\" e\\ f"),
        ["BF.ADD", "k", "a b", "c \" d", "e f"]
    );
    assert_eq!(
        w("CONFIG GET 'bf.*'  # all settings"),
        ["CONFIG", "GET", "bf.*"]
    );
    assert_eq!(w("SET k ''"), ["SET", "k", ""]);
    for bad in ["INFO | grep x", "GET $k", "GET k > out", "KEYS *", "GET 'k"] {
        assert!(shell_words(bad).is_err(), "{bad}");
    }
    let words: Vec<String> = ["-p", "6380", "-3", "-n", "1", "BF.INFO", "-p"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        cli_args(&words, 7000),
        [
            "--no-raw",
            "-h",
            "127.0.0.1",
            "-p",
            "7000",
            "-3",
            "-n",
            "1",
            "BF.INFO",
            "-p"
        ]
    );
}

#[test]
fn ellipsis_lines_match_any_lines() {
    let v = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "b", "c", "d"])));
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "d"])));
    assert!(matches(&v(&["..."]), &v(&[])));
    assert!(!matches(&v(&["a", "...", "d"]), &v(&["a", "b"])));
    assert!(!matches(&v(&["a"]), &v(&["a", "b"])));
    assert!(!matches(&v(&[]), &v(&["a"])));
}

/// The names of the fields `INFO bf` has on a live server (`bf_filters`, …).
fn info_bf_fields() -> Vec<String> {
    let server = start(&[]);
    let out = Command::new(redis_cli())
        .args(["-p", &server.port().to_string(), "INFO", "bf"])
        .output()
        .expect("run redis-cli");
    let fields: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_string()))
        .collect();
    assert!(fields.len() > 10, "INFO bf: {fields:?}");
    fields
}

/// Every `bf_…` name written in backquotes in `text`.
fn documented_fields(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|code| {
            code.starts_with("bf_")
                && code[3..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

/// The tables of `INFO bf` fields (docs/sizing.md for all of them,
/// docs/cuckoo.md for the Cuckoo ones) name exactly the fields the server
/// emits, with their `bf_` prefix: a field added to the INFO callback (or
/// renamed) must be documented.
#[test]
fn info_bf_fields_are_documented() {
    let fields = info_bf_fields();
    let read = |doc: &str| fs::read_to_string(root().join(doc)).expect(doc);
    let sizing = read("docs/sizing.md");
    let table = sizing
        .split("## Alerting with Prometheus")
        .nth(1)
        .expect("sizing.md: Alerting with Prometheus")
        .split("\n\n")
        .find(|block| block.starts_with("| field |"))
        .expect("sizing.md: the INFO bf table");
    let mut listed = documented_fields(table);
    listed.sort();
    listed.dedup();
    let mut emitted = fields.clone();
    emitted.sort();
    assert_eq!(listed, emitted, "docs/sizing.md's INFO bf table");

    let cuckoo = read("docs/cuckoo.md");
    let named = documented_fields(&cuckoo);
    for field in fields.iter().filter(|f| f.starts_with("bf_cuckoo_")) {
        assert!(
            named.contains(field),
            "docs/cuckoo.md does not name {field}"
        );
    }
    for name in named {
        assert!(
            fields.contains(&name),
            "docs/cuckoo.md names {name}, which INFO bf lacks"
        );
    }
}
