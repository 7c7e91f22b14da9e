//! Resident memory from `/proc/<pid>/smaps`: a process's whole resident set, its anonymous
//! (heap) part, and the part that maps a store's files.

use std::io;
use std::path::Path;

/// Resident bytes of one process.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// All resident pages.
    pub rss: u64,
    /// Anonymous pages (heap, stacks).
    pub anonymous: u64,
    /// Resident pages of mappings of files under the store directory.
    pub store: u64,
}

/// `pid`'s resident memory (`None`: this process), with the mappings of files under `dir`
/// counted apart.
pub fn of(pid: Option<u32>, dir: &Path) -> io::Result<Resident> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/smaps"),
        None => "/proc/self/smaps".to_owned(),
    };
    Ok(parse(&std::fs::read_to_string(path)?, dir))
}

/// Sums an smaps text: header lines (`start-end perms offset dev inode [path]`) open a
/// mapping, `Field: N kB` lines describe it.
pub fn parse(smaps: &str, dir: &Path) -> Resident {
    let dir = dir.to_string_lossy();
    let mut resident = Resident::default();
    let mut in_store = false;
    for line in smaps.lines() {
        let mut words = line.split_ascii_whitespace();
        let Some(first) = words.next() else { continue };
        if !first.ends_with(':') {
            in_store = words.nth(4).is_some_and(|p| p.starts_with(&*dir));
            continue;
        }
        let kib: u64 = words.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        match first {
            "Rss:" => {
                resident.rss += kib << 10;
                if in_store {
                    resident.store += kib << 10;
                }
            }
            "Anonymous:" => resident.anonymous += kib << 10,
            _ => {}
        }
    }
    resident
}

/// Total size of the files in `dir` and its subdirectories (on tmpfs, memory they hold).
pub fn files_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => files_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests;
