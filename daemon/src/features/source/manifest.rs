//! The manifest: the one small object every daemon polls. It names the snapshot object and
//! says what its bytes must be; the publisher writes it after the object, so a manifest
//! never names an object still being written.
//!
//! ```json
//! {"format": 1, "version": 42, "object": "snapshots/v42-0f1e2d3c4b5a6978.parquet",
//!  "size": 1048576, "sha256": "<64 hex digits>", "table": "users", "created_unix_ms": 0}
//! ```

use serde::{Deserialize, Serialize};

use super::super::{change::table_name, ingest::Format};

/// The only manifest format there is.
pub const FORMAT: u32 = 1;

/// Highest manifest version.
pub const MAX_VERSION: u64 = i64::MAX as u64;

/// Largest manifest read: it holds a few short fields.
pub const MAX_BYTES: u64 = 64 * 1024;

/// The snapshot a fleet should serve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The snapshot's version; each manifest raises it. Daemons publish it as their store's
    /// version, so one number names one snapshot across the fleet.
    pub version: u64,
    /// The snapshot object, relative to the source's prefix; its extension is its format
    /// (`.parquet`, `.csv`, `.ewfs`).
    pub object: String,
    /// The object's length in bytes.
    pub size: u64,
    /// SHA-256 of the object, lowercase hex.
    pub sha256: String,
    /// The table of rows that do not name one (a CSV file, Parquet without a `table` column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// When the publisher wrote the manifest, milliseconds since the Unix epoch.
    #[serde(default)]
    pub created_unix_ms: u64,
}

impl Manifest {
    /// Parses and checks a manifest.
    pub fn parse(bytes: &[u8]) -> anyhow::Result<Manifest> {
        // serde_json's message may quote the bucket's text: the kind and place only.
        let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| {
            let (kind, line, column) = (e.classify(), e.line(), e.column());
            anyhow::anyhow!("not a manifest: {kind:?} error at line {line} column {column}")
        })?;
        manifest.check()?;
        Ok(manifest)
    }

    /// The object's format.
    pub(in crate::features) fn format(&self) -> anyhow::Result<Format> {
        let name = self.object.rsplit('/').next().unwrap_or_default();
        Format::of(name).map(|(format, _)| format).ok_or_else(|| {
            anyhow::anyhow!("manifest: the object's name must end in .parquet, .csv or .ewfs")
        })
    }

    /// Checks every field; what a daemon refuses, `push` refuses to write.
    pub(super) fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.format == FORMAT,
            "manifest format {} (this daemon reads format {FORMAT})",
            self.format
        );
        // Store versions are raised by one per publish and shown as signed 64-bit metrics.
        anyhow::ensure!(
            (1..=MAX_VERSION).contains(&self.version),
            "manifest: version must be 1 to {MAX_VERSION}"
        );
        let safe = |segment: &str| !matches!(segment, "" | "." | "..");
        anyhow::ensure!(
            (1..=1024).contains(&self.object.len())
                && self.object.split('/').all(safe)
                && !self.object.chars().any(char::is_control),
            "manifest: the object must be a relative name under the prefix, without . or .. \
             segments or control characters"
        );
        self.format()?;
        anyhow::ensure!(self.size >= 1, "manifest: size must be at least 1");
        anyhow::ensure!(
            self.sha256.len() == 64
                && self
                    .sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "manifest: sha256 must be 64 lowercase hex digits"
        );
        if let Some(table) = &self.table {
            table_name(table)?;
        }
        Ok(())
    }
}

/// Lowercase hex of a digest.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            format: FORMAT,
            version: 3,
            object: "snapshots/v3-00.parquet".into(),
            size: 10,
            sha256: "ab".repeat(32),
            table: Some("users".into()),
            created_unix_ms: 1,
        }
    }

    #[test]
    fn a_manifest_round_trips_and_unknown_fields_are_ignored() {
        let m = manifest();
        let mut json = serde_json::to_value(&m).unwrap();
        json["later"] = 1.into();
        assert_eq!(Manifest::parse(json.to_string().as_bytes()).unwrap(), m);
    }

    #[test]
    fn every_bad_field_is_refused() {
        type Spoil = fn(&mut Manifest);
        let bad: [(Spoil, &str); 10] = [
            (|m| m.format = 2, "format 2"),
            (|m| m.version = 0, "version"),
            (|m| m.version = MAX_VERSION + 1, "version"),
            (|m| m.object = "../x.parquet".into(), "relative"),
            (|m| m.object = "/x.parquet".into(), "relative"),
            (
                |m| m.object = "a\nforged log line\n.parquet".into(),
                "control",
            ),
            (|m| m.object = "x.json".into(), ".parquet"),
            (|m| m.size = 0, "size"),
            (|m| m.sha256 = "AB".repeat(32), "sha256"),
            (|m| m.table = Some("a b".into()), "table name"),
        ];
        for (spoil, why) in bad {
            let mut m = manifest();
            spoil(&mut m);
            let json = serde_json::to_vec(&m).unwrap();
            let error = format!("{:#}", Manifest::parse(&json).unwrap_err());
            assert!(error.contains(why), "{error} lacks {why}");
        }
        assert!(Manifest::parse(b"{").is_err());
        assert!(Manifest::parse(b"[]").is_err());
    }
}
