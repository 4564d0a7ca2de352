//! A migration's state file: an append-only journal (JSON lines) of which
//! filters are copied and how far the current copy went, replayed to
//! resume an interrupted run.

use std::collections::HashSet;
use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Failure, Result};

/// Version 2: copies are loaded into a temporary key (version 1 loaded
/// into the final name).
pub const STATE_VERSION: u32 = 2;

/// What identifies a migration: a state file belongs to one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub from: String,
    pub to: String,
    /// `key:<hex>`, `pattern:<text>` or `all`.
    pub selection: String,
    /// Destination name (hex) for --rename.
    pub rename: Option<String>,
}

/// The filter being copied when the run stopped.
#[derive(Clone, Debug)]
pub struct Current {
    /// Source key, hex.
    pub key: String,
    /// Destination key, hex.
    pub dest: String,
    /// Readable form of the source key (informational).
    pub key_text: String,
    /// The SCANDUMP header (iterator 0) the copy started from, hex.
    pub header: String,
    /// The next source iterator: the one returned with the last chunk
    /// loaded at the destination (1 when no chunk was loaded yet).
    pub next_iterator: i64,
    pub bytes_loaded: u64,
    pub chunks_loaded: u64,
}

/// The first line of a state file.
#[derive(Serialize, Deserialize)]
pub struct Preamble {
    pub version: u32,
    #[serde(flatten)]
    pub identity: Identity,
}

/// Each further line of a state file: the file is an append-only journal
/// (JSON lines), so recording progress costs one short line, however many
/// filters were done before.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// A filter's copy starts (recorded before its header is sent).
    Start {
        key: String,
        dest: String,
        key_text: String,
        header: String,
    },
    /// One more chunk is loaded at the destination.
    Loaded {
        next_iterator: i64,
        bytes_loaded: u64,
        chunks_loaded: u64,
    },
    /// The filter is copied and verified.
    Done { key: String },
    /// The current copy will not be resumed (its header was refused, or
    /// its verification failed).
    Abandon { key: String },
}

/// A migration's progress, as replayed from its state file.
#[derive(Clone, Debug)]
pub struct State {
    pub identity: Identity,
    /// Source keys (hex) already copied and verified.
    pub done: HashSet<String>,
    pub current: Option<Current>,
}

impl State {
    pub fn new(identity: Identity) -> State {
        State {
            identity,
            done: HashSet::new(),
            current: None,
        }
    }

    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::Start {
                key,
                dest,
                key_text,
                header,
            } => {
                self.current = Some(Current {
                    key: key.clone(),
                    dest: dest.clone(),
                    key_text: key_text.clone(),
                    header: header.clone(),
                    next_iterator: 1,
                    bytes_loaded: 0,
                    chunks_loaded: 0,
                })
            }
            Event::Loaded {
                next_iterator,
                bytes_loaded,
                chunks_loaded,
            } => {
                if let Some(c) = self.current.as_mut() {
                    c.next_iterator = *next_iterator;
                    c.bytes_loaded = *bytes_loaded;
                    c.chunks_loaded = *chunks_loaded;
                }
            }
            Event::Done { key } => {
                self.done.insert(key.clone());
                self.current = None;
            }
            Event::Abandon { .. } => self.current = None,
        }
    }

    /// Replays a state file: the state, and the length of its complete
    /// lines (a line cut short by a crash is dropped).
    pub fn load(path: &Path) -> Result<Option<(State, u64)>> {
        let text = match fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Failure::new(format!("{}: {e}", path.display()))),
        };
        let bad = |what: String| {
            Failure::new(format!(
                "{}: not a migration state file ({what}); delete it or pass another --state-file",
                path.display()
            ))
        };
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut lines = text[..complete]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty());
        let Some(first) = lines.next() else {
            return Ok(None);
        };
        let preamble: Preamble =
            serde_json::from_slice(first).map_err(|e| bad(format!("line 1: {e}")))?;
        if preamble.version == 1 {
            return Err(Failure::new(format!(
                "{}: written by an older ferrobloom, which loaded copies under their final \
                 names: a filter it left partly copied at {} is not complete. Delete the \
                 state file and run the migration again with --force",
                path.display(),
                preamble.identity.to
            )));
        }
        if preamble.version != STATE_VERSION {
            return Err(Failure::new(format!(
                "{}: state file version {} is not supported",
                path.display(),
                preamble.version
            )));
        }
        let mut state = State::new(preamble.identity);
        for (i, line) in lines.enumerate() {
            let event: Event =
                serde_json::from_slice(line).map_err(|e| bad(format!("line {}: {e}", i + 2)))?;
            state.apply(&event);
        }
        Ok(Some((state, complete as u64)))
    }
}

/// Appends events to the state file (created, with its preamble, on the
/// first event).
pub struct Journal {
    pub path: PathBuf,
    pub file: Option<fs::File>,
    /// Bytes of complete lines in an existing file.
    pub valid: u64,
}

impl Journal {
    pub fn append(&mut self, state: &State, event: &Event, sync: bool) -> Result<()> {
        let fail = |e: std::io::Error| Failure::new(format!("{}: {e}", self.path.display()));
        if self.file.is_none() {
            let mut file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&self.path)
                .map_err(fail)?;
            // Drop a line cut short by an earlier crash.
            file.set_len(self.valid).map_err(fail)?;
            file.seek(SeekFrom::End(0)).map_err(fail)?;
            if self.valid == 0 {
                let preamble = Preamble {
                    version: STATE_VERSION,
                    identity: state.identity.clone(),
                };
                let line = serde_json::to_string(&preamble).expect("JSON") + "\n";
                file.write_all(line.as_bytes()).map_err(fail)?;
            }
            self.file = Some(file);
        }
        let file = self.file.as_mut().expect("opened");
        let line = serde_json::to_string(event).expect("JSON") + "\n";
        file.write_all(line.as_bytes()).map_err(fail)?;
        if sync {
            file.sync_data().map_err(fail)?;
        }
        Ok(())
    }

    pub fn remove(&mut self) {
        self.file = None;
        self.valid = 0;
        let _ = fs::remove_file(&self.path);
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let b = b"\x00ab\xff".to_vec();
        assert_eq!(hex(&b), "006162ff");
        assert_eq!(unhex("006162ff").unwrap(), b);
        assert!(unhex("0").is_none());
        assert!(unhex("zz").is_none());
    }

    #[test]
    fn state_file_replay() {
        let dir = std::env::temp_dir().join(format!("fb-journal-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.state");
        let _ = fs::remove_file(&path);
        let identity = Identity {
            from: "redis://a/".into(),
            to: "redis://b/".into(),
            selection: "all".into(),
            rename: None,
        };
        let mut state = State::new(identity.clone());
        let mut journal = Journal {
            path: path.clone(),
            file: None,
            valid: 0,
        };
        let start = |k: &str| Event::Start {
            key: k.into(),
            dest: k.into(),
            key_text: k.into(),
            header: "00".into(),
        };
        for event in [
            start("6161"),
            Event::Loaded {
                next_iterator: 9,
                bytes_loaded: 8,
                chunks_loaded: 1,
            },
            Event::Done { key: "6161".into() },
            start("6262"),
            Event::Loaded {
                next_iterator: 17,
                bytes_loaded: 16,
                chunks_loaded: 1,
            },
        ] {
            state.apply(&event);
            journal.append(&state, &event, false).unwrap();
        }
        drop(journal);
        // A line cut short by a crash is ignored, then overwritten.
        let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"loaded\":{\"next_it").unwrap();
        drop(f);
        let (loaded, valid) = State::load(&path).unwrap().unwrap();
        assert_eq!(loaded.identity, identity);
        assert!(loaded.done.contains("6161"));
        let cur = loaded.current.clone().unwrap();
        assert_eq!((cur.key.as_str(), cur.next_iterator), ("6262", 17));
        let mut journal = Journal {
            path: path.clone(),
            file: None,
            valid,
        };
        let mut state = loaded;
        let done = Event::Done { key: "6262".into() };
        state.apply(&done);
        journal.append(&state, &done, true).unwrap();
        let (again, _) = State::load(&path).unwrap().unwrap();
        assert_eq!(again.done.len(), 2);
        assert!(again.current.is_none());
        journal.remove();
        assert!(!path.exists());
        // Not a state file.
        fs::write(&path, "hello\n").unwrap();
        assert!(State::load(&path).is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
