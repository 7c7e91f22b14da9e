//! A snapshot object downloaded to a file of the daemon's own, chunk by chunk: memory holds
//! one chunk, each chunk has a deadline and so does the whole, and the bytes must be the
//! manifest's size and SHA-256.

use std::{
    fs,
    io::{Seek, Write},
    time::Duration,
};

use futures_util::StreamExt;
use object_store::{ObjectStoreExt, path::Path};
use sha2::{Digest, Sha256};

use super::{super::ingest::create_anew, Failure, Manifest, Reason, Source, manifest::hex};

/// The object `manifest` names, checked, in the source's spool file (read from its start).
pub(super) async fn fetch(
    source: &Source,
    object: &Path,
    manifest: &Manifest,
) -> Result<fs::File, Failure> {
    let whole = Duration::from_secs(source.config.download_timeout_secs);
    match tokio::time::timeout(whole, chunks(source, object, manifest)).await {
        Ok(done) => done,
        Err(_) => Err(Failure::timeout("downloading the snapshot", whole)),
    }
}

async fn chunks(source: &Source, object: &Path, manifest: &Manifest) -> Result<fs::File, Failure> {
    let stall = Duration::from_millis(source.config.request_timeout_ms);
    let what = format!("snapshot object {:?}", manifest.object);
    let result = match tokio::time::timeout(stall, source.store.get(object)).await {
        Err(_) => return Err(Failure::timeout(&what, stall)),
        Ok(Err(error)) => return Err(Failure::store(&what, &error)),
        Ok(Ok(result)) => result,
    };
    if result.meta.size != manifest.size {
        let message = format!(
            "{what} is {} bytes, the manifest says {}",
            result.meta.size, manifest.size
        );
        return Err(Failure::new(Reason::Refused, message));
    }
    let mut file = spool(source).map_err(|e| {
        Failure::new(
            Reason::Publish,
            format!("creating {}: {e}", source.spool.display()),
        )
    })?;
    let mut stream = result.into_stream();
    let mut hash = Sha256::new();
    let mut got = 0u64;
    loop {
        let chunk = match tokio::time::timeout(stall, stream.next()).await {
            Err(_) => {
                return Err(Failure::timeout(
                    &format!("{what} after {got} bytes"),
                    stall,
                ));
            }
            Ok(None) => break,
            Ok(Some(Err(error))) => {
                let message = format!("{what} cut off after {got} bytes: {error}");
                return Err(Failure::new(Reason::Truncated, message));
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        got += chunk.len() as u64;
        source.metrics.bytes.add(chunk.len() as u64);
        if got > manifest.size {
            let message = format!(
                "{what} is longer than the manifest's {} bytes",
                manifest.size
            );
            return Err(Failure::new(Reason::Refused, message));
        }
        hash.update(&chunk);
        // Local disk: a chunk's write does not stall the runtime noticeably.
        file.write_all(&chunk).map_err(|e| {
            Failure::new(
                Reason::Publish,
                format!("writing {}: {e}", source.spool.display()),
            )
        })?;
    }
    if got < manifest.size {
        let message = format!("{what} ended after {got} of {} bytes", manifest.size);
        return Err(Failure::new(Reason::Truncated, message));
    }
    let digest = hex(&hash.finalize());
    if digest != manifest.sha256 {
        let message = format!(
            "{what}: SHA-256 {digest}, the manifest says {}",
            manifest.sha256
        );
        return Err(Failure::new(Reason::Refused, message));
    }
    file.rewind()
        .map_err(|e| Failure::new(Reason::Publish, format!("rewinding the download: {e}")))?;
    Ok(file)
}

/// The spool file, made anew (see [`create_anew`]) and unlinked at once: the download lives
/// only as long as its descriptor, so none is left behind.
fn spool(source: &Source) -> std::io::Result<fs::File> {
    let file = create_anew(&source.spool, 0o600)?;
    fs::remove_file(&source.spool)?;
    Ok(file)
}
