//! `edgewised snapshot push`: the publishing side of a source. The file is decoded and
//! checked here first, so a file every daemon would refuse never reaches the bucket; then the
//! object is uploaded under a name of its own, and only then is the manifest rewritten, so a
//! daemon never reads a manifest naming a partial object.
//!
//! One publisher per prefix: two pushes at once may both read version N and both write N + 1,
//! each naming a complete object; a daemon that took the first ignores the second as not newer.

use std::{path::Path as FsPath, sync::Arc};

use anyhow::Context;
use edgewise::FeatureSnapshot;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, buffered::BufWriter};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    super::{
        Change,
        ingest::{Format, read_file},
    },
    Manifest, manifest, remote,
};
use crate::config::SourceConfig;

/// What a push published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest written.
    pub manifest: Manifest,
    /// Rows across the snapshot's tables.
    pub rows: usize,
}

/// Uploads `file` (`.parquet`, `.csv` or `.ewfs`) to the source and points its manifest at
/// it. Rows without a table go to `table`, or to the table the file is named after. Files
/// that decode to more than `max_bytes` are refused, as the daemons would refuse them.
pub async fn push(
    config: &SourceConfig,
    file: &FsPath,
    table: Option<&str>,
    max_bytes: u64,
) -> anyhow::Result<Pushed> {
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .context("the file has no name")?;
    let (format, stem) = Format::of(name)
        .context("the file's name must end in .parquet, .csv or .ewfs (its format)")?;
    let table = match format {
        Format::Archive => None,
        Format::Csv | Format::Parquet => Some(table.unwrap_or(stem).to_owned()),
    };
    let path = file.to_owned();
    let hint = table.clone();
    let (rows, size, sha256) =
        tokio::task::spawn_blocking(move || check(&path, hint.as_deref(), max_bytes)).await??;

    let (store, prefix) = remote::open(config)?;
    let manifest_path = remote::under(&prefix, &config.manifest);
    let version = current_version(&*store, &manifest_path).await? + 1;
    let extension = name.rsplit('.').next().unwrap_or_default();
    let object = format!("snapshots/v{version}-{}.{extension}", &sha256[..16]);
    let uploaded = upload(Arc::clone(&store), remote::under(&prefix, &object), file)
        .await
        .with_context(|| format!("uploading {object}"))?;
    anyhow::ensure!(
        uploaded == (size, sha256.clone()),
        "{} changed while it was pushed; the manifest is unchanged",
        file.display()
    );
    let manifest = Manifest {
        format: manifest::FORMAT,
        version,
        object,
        size,
        sha256,
        table,
        created_unix_ms: super::super::unix_ms(),
    };
    manifest.check()?;
    let json = serde_json::to_vec_pretty(&manifest)?;
    store
        .put(&manifest_path, PutPayload::from(json))
        .await
        .with_context(|| format!("writing the manifest {manifest_path}"))?;
    Ok(Pushed { manifest, rows })
}

/// Decodes and validates the file as a daemon would; its rows, size and SHA-256.
fn check(
    path: &FsPath,
    table: Option<&str>,
    max_bytes: u64,
) -> anyhow::Result<(usize, u64, String)> {
    let refused = || format!("{} would be refused", path.display());
    let tables = read_file(path, table, max_bytes).with_context(refused)?;
    let mut snapshot = FeatureSnapshot::default();
    Change::ReplaceAll(FeatureSnapshot {
        tables,
        ..FeatureSnapshot::default()
    })
    .apply(&mut snapshot)
    .with_context(refused)?;
    let rows = snapshot.tables.iter().map(|t| t.rows.len()).sum();

    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hash = Sha256::new();
    let size = std::io::copy(&mut file, &mut hash).context("reading")?;
    anyhow::ensure!(size > 0, "{} is empty", path.display());
    Ok((rows, size, manifest::hex(&hash.finalize())))
}

/// The version of the manifest at `path`, 0 if there is none.
async fn current_version(
    store: &dyn ObjectStore,
    path: &object_store::path::Path,
) -> anyhow::Result<u64> {
    let bytes = match store.get(path).await {
        Err(object_store::Error::NotFound { .. }) => return Ok(0),
        got => {
            got.with_context(|| format!("reading the manifest {path}"))?
                .bytes()
                .await?
        }
    };
    let manifest = Manifest::parse(&bytes).with_context(|| {
        format!("the manifest {path} is unreadable; fix or delete it before pushing")
    })?;
    Ok(manifest.version)
}

/// Streams `file` to `path`, in parts if it is large; the size and SHA-256 of the bytes sent.
/// A failed upload is aborted (no multipart upload is left behind).
async fn upload(
    store: Arc<dyn ObjectStore>,
    path: object_store::path::Path,
    file: &FsPath,
) -> anyhow::Result<(u64, String)> {
    let mut reader = tokio::fs::File::open(file).await?;
    let mut writer = BufWriter::new(store, path);
    let (mut hash, mut size) = (Sha256::new(), 0u64);
    let mut chunk = vec![0; 1 << 20];
    let sent: std::io::Result<()> = async {
        loop {
            let n = reader.read(&mut chunk).await?;
            if n == 0 {
                return writer.shutdown().await;
            }
            hash.update(&chunk[..n]);
            size += n as u64;
            writer.write_all(&chunk[..n]).await?;
        }
    }
    .await;
    if let Err(error) = sent {
        let _ = writer.abort().await;
        return Err(error.into());
    }
    Ok((size, manifest::hex(&hash.finalize())))
}
