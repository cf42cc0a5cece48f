//! The `srccode` field: the text of the source line a sample's ip comes
//! from, printed on a line of its own after the sample (perf's
//! `map__fprintf_srccode` and `find_sourceline`, tools/perf/util/srccode.c).
//!
//! ```text
//! cw-sort   13796                                   <- the sample, its callchain
//! \t    55ae9ce962f0 cmp_u32                           and the blank line after it
//!
//! |43           uint32_t x = *(const uint32_t *)a;  <- "|%-8d %.*s": the line number
//!                                                      left-aligned in 8, a blank,
//!                                                      the line's bytes
//! ```
//!
//! What perf does, and so pstitch:
//!
//! - The file and line are the first answer addr2line gives for the
//!   sample's ip (the innermost inline level: what `srcline` shows, with the
//!   path in full; [`crate::symbols::Symbolizer::srcline_split`]). Only the
//!   sample's own ip, never the callchain's.
//! - The file is opened at that path as it is: relative paths from the
//!   working directory, no `--symfs`.
//! - Each thread remembers the last line it printed (perf's
//!   `thread->srccode_state`): the same file and line again prints nothing.
//!   Nothing printed leaves the memory as it was.
//! - A file that cannot be opened or mapped (missing, a directory, empty,
//!   not a regular file) or a line outside it (line 0, past the last line)
//!   prints nothing.
//! - Lines end at `\n` only: a `\r` before it is printed. The text stops at
//!   a NUL byte (`%.*s`). The last line of a file without a final newline
//!   runs to the end of the file: perf's length is garbage there (the
//!   distance from a null pointer) and `%.*s` stops at the zeroes that fill
//!   the mapping's last page. (When the file's size is a multiple of the
//!   page size there are no such zeroes and perf reads past its mapping:
//!   pstitch stops at the end of the file.)
//!
//! perf maps each file whole and keeps up to 64 of them, or 32 MiB, the
//! least recently used going first; so does [`SourceFiles`], with an index
//! of every 64th line's start instead of perf's pointer to every line.
//! A file is opened without blocking, so a FIFO at a source path is
//! skipped where perf would wait for a writer forever. A file over
//! [`MAX_FILE`] is not read: a path in hostile debug information can name
//! anything (`/proc/kcore` claims 128 TiB), and perf, which counts the
//! lines of a whole file first, would take forever on it.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;

use crate::engine::mapping::Mapping;
use crate::fasthash::FastMap;

/// perf's `MAXSRCFILES`.
const MAX_FILES: usize = 64;
/// perf's `MAXSRCCACHE`.
const MAX_MAPPED: usize = 32 << 20;
/// The largest file read (see the module doc): no source file comes near.
const MAX_FILE: u64 = 1 << 30;
/// One index entry per this many lines.
const STRIDE: usize = 64;

/// The source files read so far (the most recently used last).
#[derive(Default)]
pub struct SourceFiles {
    files: Vec<SourceFile>,
    mapped: usize,
}

struct SourceFile {
    path: String,
    text: Mapping,
    /// perf's `numlines`: the newlines, plus one for a last line without.
    lines: usize,
    /// The start of every [`STRIDE`]th line.
    starts: Vec<usize>,
}

impl SourceFile {
    fn open(path: &str) -> Option<SourceFile> {
        // Without O_NONBLOCK, opening a FIFO waits for a writer.
        let file = File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
        let meta = file.metadata().ok()?;
        // perf maps st_size bytes: nothing to map (an empty file, a device,
        // /proc) or nothing mappable (a directory, a FIFO, a socket) fails.
        if !meta.is_file() || meta.len() == 0 || meta.len() > MAX_FILE {
            return None;
        }
        let text = Mapping::map(&file).ok()?;
        let mut starts = vec![0];
        let mut lines = 0;
        for (i, _) in text.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            lines += 1;
            if lines % STRIDE == 0 {
                starts.push(i + 1);
            }
        }
        if text.last() != Some(&b'\n') {
            lines += 1;
        }
        Some(SourceFile { path: path.to_string(), text, lines, starts })
    }

    /// perf's `find_sourceline` in an open file: line `line` (from 1)
    /// without its newline, up to a NUL.
    fn line(&self, line: u32) -> Option<&[u8]> {
        let i = (line as usize).checked_sub(1).filter(|&i| i < self.lines)?;
        let mut at = *self.starts.get(i / STRIDE)?;
        for _ in 0..i % STRIDE {
            at += self.text.get(at..)?.iter().position(|&b| b == b'\n')? + 1;
        }
        let rest = self.text.get(at..)?;
        let end = rest.iter().position(|&b| b == b'\n' || b == 0).unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

impl SourceFiles {
    /// The text of line `line` (from 1) of the file at `path`, or `None`
    /// where perf prints nothing.
    pub fn line(&mut self, path: &str, line: u32) -> Option<&[u8]> {
        let at = match self.files.iter().position(|f| f.path == path) {
            Some(i) => {
                let f = self.files.remove(i);
                self.files.push(f);
                self.files.len() - 1
            }
            None => {
                // perf prunes before it opens, while more than its limits
                // are held.
                while !self.files.is_empty() && (self.files.len() > MAX_FILES || self.mapped > MAX_MAPPED) {
                    let f = self.files.remove(0);
                    self.mapped -= f.text.len();
                }
                let f = SourceFile::open(path)?;
                self.mapped += f.text.len();
                self.files.push(f);
                self.files.len() - 1
            }
        };
        self.files[at].line(line)
    }

    /// Files held now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.files.len()
    }
}

/// The srccode lines of a run: the files, and each thread's last line.
#[derive(Default)]
pub struct Srccode {
    files: SourceFiles,
    /// By [`crate::machine::Thread::serial`]: the file and line printed last.
    last: FastMap<u64, (String, u32)>,
}

impl Srccode {
    /// perf's `map__fprintf_srccode` for thread `thread` (a
    /// [`crate::machine::Thread::serial`]) at `file:line`, with the newline
    /// perf's caller adds: appends nothing if the thread printed that line
    /// last or the line cannot be read.
    pub fn print(&mut self, out: &mut Vec<u8>, thread: u64, file: &str, line: u32) {
        if self.last.get(&thread).is_some_and(|(f, l)| *l == line && f == file) {
            return;
        }
        let Some(text) = self.files.line(file, line) else { return };
        out.push(b'|');
        // %-8d of an unsigned.
        let n = (line as i32).to_string();
        out.extend_from_slice(n.as_bytes());
        out.resize(out.len() + 8usize.saturating_sub(n.len()), b' ');
        out.push(b' ');
        out.extend_from_slice(text);
        out.push(b'\n');
        self.last.insert(thread, (file.to_string(), line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch directory of this test process, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("pstitch-srccode-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).expect("scratch dir");
            Dir(d)
        }

        fn file(&self, name: &str, bytes: &[u8]) -> String {
            let p = self.0.join(name);
            std::fs::write(&p, bytes).expect("write");
            p.to_str().expect("utf-8 path").to_string()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn line(files: &mut SourceFiles, path: &str, n: u32) -> Option<Vec<u8>> {
        files.line(path, n).map(<[u8]>::to_vec)
    }

    /// The lines of a file holding `text`: (line number, what is printed).
    fn lines_of(name: &str, text: &[u8], want: &[(u32, Option<&[u8]>)]) {
        let d = Dir::new(name);
        let mut files = SourceFiles::default();
        let p = d.file(name, text);
        for (n, w) in want {
            assert_eq!(line(&mut files, &p, *n).as_deref(), *w, "{name}: line {n}");
        }
    }

    #[test]
    fn lines_as_perf_finds_them() {
        lines_of(
            "lines",
            b"one\n\ntwo\r\nthree",
            &[
                (1, Some(&b"one"[..])),
                // An empty line is a line.
                (2, Some(&b""[..])),
                // A CR before the newline is part of the text.
                (3, Some(&b"two\r"[..])),
                // The last line without a newline runs to the end.
                (4, Some(&b"three"[..])),
                // Line 0 and lines past the end are not there.
                (0, None),
                (5, None),
                (u32::MAX, None),
            ],
        );
        // A final newline makes no extra line.
        lines_of("final-newline", b"x\ny\n", &[(2, Some(&b"y"[..])), (3, None)]);
    }

    #[test]
    fn text_stops_at_a_nul_and_binary_bytes_pass() {
        lines_of(
            "binary",
            b"\x7fELF\x02\x01\0\0rest\n\xff\xfe\x80\nlast\0after",
            &[(1, Some(&b"\x7fELF\x02\x01"[..])), (2, Some(&b"\xff\xfe\x80"[..])), (3, Some(&b"last"[..])), (4, None)],
        );
    }

    #[test]
    fn files_perf_cannot_map_print_nothing() {
        let d = Dir::new("unmappable");
        let mut files = SourceFiles::default();
        let empty = d.file("empty.c", b"");
        assert_eq!(line(&mut files, &empty, 1), None);
        let dir = d.0.join("dir.c");
        std::fs::create_dir(&dir).expect("dir");
        assert_eq!(line(&mut files, dir.to_str().expect("utf-8"), 1), None);
        assert_eq!(line(&mut files, &d.0.join("missing.c").to_string_lossy(), 1), None);
        assert_eq!(line(&mut files, "/dev/null", 1), None);
        // A FIFO is not waited on.
        let fifo = d.0.join("fifo.c");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        assert!(made, "mkfifo");
        assert_eq!(line(&mut files, fifo.to_str().expect("utf-8"), 1), None);
        // A file larger than any source file (sparse here) is not read.
        let huge = d.0.join("huge.c");
        std::fs::File::create(&huge).and_then(|f| f.set_len(MAX_FILE + 1)).expect("sparse file");
        assert_eq!(line(&mut files, huge.to_str().expect("utf-8"), 1), None);
        assert_eq!(files.held(), 0);
    }

    #[test]
    fn an_unreadable_file_prints_what_the_process_may_read() {
        use std::os::unix::fs::PermissionsExt;
        let d = Dir::new("unreadable");
        let p = d.file("secret.c", b"hidden\n");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        // root reads it anyway (as perf-ref, run as root, does).
        let readable = File::open(&p).is_ok();
        let mut files = SourceFiles::default();
        let want = readable.then(|| b"hidden".to_vec());
        assert_eq!(line(&mut files, &p, 1), want);
    }

    #[test]
    fn long_files_index_every_stride() {
        let d = Dir::new("long");
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let p = d.file("long.c", text.as_bytes());
        let mut files = SourceFiles::default();
        for i in [1u32, 63, 64, 65, 128, 129, 999, 1000] {
            assert_eq!(line(&mut files, &p, i), Some(format!("line {i}").into_bytes()), "line {i}");
        }
        assert_eq!(line(&mut files, &p, 1001), None);
    }

    #[test]
    fn at_most_65_files_are_held() {
        let d = Dir::new("many");
        let mut files = SourceFiles::default();
        let paths: Vec<String> = (0..100).map(|i| d.file(&format!("f{i}.c"), format!("file {i}\n").as_bytes())).collect();
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(line(&mut files, p, 1), Some(format!("file {i}").into_bytes()));
            assert!(files.held() <= MAX_FILES + 1);
        }
        // The least recently used went: the first file is read again.
        assert_eq!(line(&mut files, &paths[0], 1), Some(b"file 0".to_vec()));
    }

    #[test]
    fn a_thread_prints_a_line_once_in_a_row() {
        let d = Dir::new("state");
        let p = d.file("s.c", b"int a;\nint b;\n");
        let mut s = Srccode::default();
        let mut out = Vec::new();
        s.print(&mut out, 1, &p, 1);
        s.print(&mut out, 1, &p, 1);
        // Another thread has its own memory.
        s.print(&mut out, 2, &p, 1);
        s.print(&mut out, 1, &p, 2);
        // Nothing printed (no line 9) leaves the memory as it was.
        s.print(&mut out, 1, &p, 9);
        s.print(&mut out, 1, &p, 2);
        s.print(&mut out, 1, &p, 1);
        assert_eq!(String::from_utf8_lossy(&out), "|1        int a;\n|1        int a;\n|2        int b;\n|1        int a;\n");
    }

    #[test]
    fn line_numbers_as_percent_minus_8d() {
        let d = Dir::new("numbers");
        let p = d.file("n.c", &b"x\n".repeat(100));
        let mut s = Srccode::default();
        let mut out = Vec::new();
        s.print(&mut out, 1, &p, 100);
        assert_eq!(out, b"|100      x\n");
    }
}
