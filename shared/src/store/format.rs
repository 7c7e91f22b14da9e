//! The archive format, the same in a data file and from [`FeatureSnapshot::to_archive`]: a
//! 64-byte header, then the rkyv archive of the snapshot.
//!
//! Header, little-endian `u64`s: magic `EWFEAT01`, generation (0 outside a store), archive
//! length, xxh3-64 of the archive, snapshot version, creation time, the length of the table
//! index after the archive (0 outside a store; see `index`), and xxh3-64 of the 56 bytes
//! before it. The full 64-bit checksum is in the data, not squeezed into the state word as
//! mmap-sync does (24 bits there); the writer and the daemon's verifier check it, readers
//! check the header and the index.

use std::path::Path;
use std::prelude::rust_2024::*;
use std::string::ToString;
use std::vec::Vec;

use rkyv::rancor;
use rkyv::util::AlignedVec;
use xxhash_rust::xxh3::xxh3_64;

use super::schema::ArchivedFeatureSnapshot;
use super::{FeatureSnapshot, StoreError};

/// Header bytes before the archive; keeps the archive 64-byte aligned in a mapping.
pub(crate) const HEADER: usize = 64;

const MAGIC: u64 = u64::from_le_bytes(*b"EWFEAT01");

/// Shown as the path of archives checked in memory.
pub(crate) const IN_MEMORY: &str = "<archive>";

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) generation: u64,
    pub(crate) len: u64,
    pub(crate) checksum: u64,
    pub(crate) version: u64,
    pub(crate) created_unix_ms: u64,
    /// Bytes of the table index after the archive; 0 if there is none.
    pub(crate) index_len: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER] {
        let words = [
            MAGIC,
            self.generation,
            self.len,
            self.checksum,
            self.version,
            self.created_unix_ms,
            self.index_len,
        ];
        let mut out = [0u8; HEADER];
        for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        let sum = xxh3_64(&out[..56]);
        out[56..].copy_from_slice(&sum.to_le_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Header, &'static str> {
        let header = bytes.get(..HEADER).ok_or("shorter than a header")?;
        let mut words = [0u64; 8];
        for (word, chunk) in words.iter_mut().zip(header.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(chunk);
            *word = u64::from_le_bytes(le);
        }
        if words[0] != MAGIC {
            return Err("not a feature archive (bad magic)");
        }
        if xxh3_64(&header[..56]) != words[7] {
            return Err("archive header checksum mismatch");
        }
        Ok(Header {
            generation: words[1],
            len: words[2],
            checksum: words[3],
            version: words[4],
            created_unix_ms: words[5],
            index_len: words[6],
        })
    }

    /// The header of `archive`, the bytes after it.
    pub(crate) fn of(snapshot: &FeatureSnapshot, generation: u64, archive: &[u8]) -> Header {
        Header {
            generation,
            len: archive.len() as u64,
            checksum: xxh3_64(archive),
            version: snapshot.version,
            created_unix_ms: snapshot.created_unix_ms,
            index_len: 0,
        }
    }
}

/// The archive bytes `header` describes within `bytes` (header included), checksum verified.
pub(crate) fn body<'b>(
    path: &Path,
    bytes: &'b [u8],
    header: &Header,
) -> Result<&'b [u8], StoreError> {
    let needed = (HEADER as u64).saturating_add(header.len);
    let body = usize::try_from(needed)
        .ok()
        .and_then(|end| bytes.get(HEADER..end));
    let body = body.ok_or_else(|| StoreError::Truncated {
        path: path.to_owned(),
        actual: bytes.len() as u64,
        needed,
    })?;
    let actual = xxh3_64(body);
    if actual != header.checksum {
        return Err(StoreError::Checksum {
            path: path.to_owned(),
            expected: header.checksum,
            actual,
        });
    }
    Ok(body)
}

/// `body` as an archived snapshot, fully validated: rkyv's bytecheck and the table layout's
/// own invariants. `body` must be 16-byte aligned.
pub(crate) fn validate<'b>(
    path: &Path,
    body: &'b [u8],
) -> Result<&'b ArchivedFeatureSnapshot, StoreError> {
    let invalid = |reason: std::string::String| StoreError::Invalid {
        path: path.to_owned(),
        reason,
    };
    let archived = rkyv::access::<ArchivedFeatureSnapshot, rancor::Error>(body)
        .map_err(|e| invalid(e.to_string()))?;
    archived.check().map_err(|e| invalid(e.to_string()))?;
    Ok(archived)
}

impl FeatureSnapshot {
    /// The snapshot in the store's archive format (header and rkyv archive), as the data files
    /// hold it: a file of these bytes can be dropped into the daemon's ingest directory.
    pub fn to_archive(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = AlignedVec::<16>::with_capacity(self.size_bound().unwrap_or(0));
        out.extend_from_slice(&[0; HEADER]);
        let mut out = rkyv::api::high::to_bytes_in::<_, rancor::Error>(self, out)
            .map_err(|e| StoreError::Serialize(e.to_string()))?;
        let header = Header::of(self, 0, &out[HEADER..]);
        out[..HEADER].copy_from_slice(&header.encode());
        Ok(out.into_vec())
    }

    /// Reads an archive from [`FeatureSnapshot::to_archive`] (or a data file), checking the
    /// header, the checksum and the archive's structure before copying it out.
    pub fn from_archive(bytes: &[u8]) -> Result<FeatureSnapshot, StoreError> {
        read_archive(Path::new(IN_MEMORY), bytes).map(|(_, snapshot)| snapshot)
    }
}

/// The header and snapshot of an archive's `bytes` (a data file's at `path`, or in memory),
/// checked as [`FeatureSnapshot::from_archive`] checks them.
pub(crate) fn read_archive(
    path: &Path,
    bytes: &[u8],
) -> Result<(Header, FeatureSnapshot), StoreError> {
    let header = Header::decode(bytes).map_err(|reason| StoreError::DataCorrupt {
        path: path.to_owned(),
        reason,
    })?;
    let body = body(path, bytes, &header)?;
    let copy;
    let body = if body.as_ptr().align_offset(16) == 0 {
        body
    } else {
        let mut aligned = AlignedVec::<16>::with_capacity(body.len());
        aligned.extend_from_slice(body);
        copy = aligned;
        &copy[..]
    };
    let archived = validate(path, body)?;
    let snapshot = rkyv::deserialize::<FeatureSnapshot, rancor::Error>(archived).map_err(|e| {
        StoreError::Invalid {
            path: path.to_owned(),
            reason: e.to_string(),
        }
    })?;
    Ok((header, snapshot))
}
