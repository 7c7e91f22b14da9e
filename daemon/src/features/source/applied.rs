//! The last manifest a daemon published, recorded beside its store: on restart the daemon
//! skips that manifest only if the store still serves what it published. A store changed
//! since (a local update, a damaged file resumed from the version before) or used before the
//! source was configured has no matching record, and the current manifest is taken again.

use std::{io::Read, path::Path};

use serde::{Deserialize, Serialize};

use super::super::ingest::write_whole;

/// Largest record read: two numbers.
const MAX_BYTES: u64 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The manifest's version.
    pub manifest: u64,
    /// The store version it was published as.
    pub published: u64,
}

/// The manifest version the store at `store_version` serves, if the record says so. A
/// missing, unreadable or foreign record is no record: the manifest is taken again.
pub fn serving(path: &Path, store_version: u64) -> Option<u64> {
    let mut text = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_BYTES).read_to_end(&mut text))
        .ok()?;
    let applied: Applied = serde_json::from_slice(&text).ok()?;
    (applied.published == store_version && store_version > 0).then_some(applied.manifest)
}

/// Records `applied`, replacing the record whole, with the store's file mode. A failure costs
/// one download at the next start, so it is reported, not fatal.
pub fn record(path: &Path, applied: Applied) -> std::io::Result<()> {
    let json = serde_json::to_vec(&applied).map_err(std::io::Error::other)?;
    write_whole(path, &json, 0o640)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_record_counts_only_for_the_store_version_it_names() {
        let dir = std::env::temp_dir().join(format!("edgewise-applied-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("source.applied");
        assert_eq!(serving(&path, 3), None, "no record");
        let applied = Applied {
            manifest: 2,
            published: 3,
        };
        // A link where the temporary file goes is replaced, not followed.
        let target = dir.join("target");
        std::fs::write(&target, b"kept").unwrap();
        std::os::unix::fs::symlink(&target, dir.join(".source.applied.tmp")).unwrap();
        record(&path, applied).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        let mode = std::os::unix::fs::PermissionsExt::mode(&path.metadata().unwrap().permissions());
        assert_eq!(
            mode & 0o027,
            0,
            "{mode:o}: writable by the group or readable by others"
        );
        assert_eq!(serving(&path, 3), Some(2));
        assert_eq!(serving(&path, 4), None, "the store moved on");
        std::fs::write(&path, b"{\"manifest\": 2").unwrap();
        assert_eq!(serving(&path, 3), None, "torn");
        std::fs::write(&path, vec![b' '; 1 << 20]).unwrap();
        assert_eq!(serving(&path, 3), None, "too big");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
