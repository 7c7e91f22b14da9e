//! The bytes of a host table and of a delta, as the daemon serves them: a 16-byte header (a
//! magic and the format number), then an rkyv archive.
//!
//! A table is archived with its labels interned ([`Wire`]): each distinct key=value once, and
//! each host naming its labels by position. A worker then interns one string per distinct
//! label, not one per host and label, and builds its index from the archive in place
//! ([`SubsetLb::decode`](crate::SubsetLb::decode)). The header makes a worker and a daemon of
//! different formats refuse each other's bytes by name ([`HostTableError::UnsupportedFormat`])
//! instead of as garbage.

use alloc::{collections::BTreeMap, string::String, vec::Vec};

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::{Aligned, Host, HostTable, HostTableError, SubsetConfig, deserialize_config, validate};

/// The format number of tables and deltas this build reads and writes.
pub(crate) const FORMAT: u16 = 3;

/// The header's magic of a table.
const TABLE_MAGIC: [u8; 14] = *b"edgewise/hosts";

/// The header's length: it keeps the archive behind it 16-byte aligned.
const HEADER: usize = 16;

#[cfg(test)]
mod tests;

/// A host table with its labels interned.
#[derive(rkyv::Archive, rkyv::Serialize)]
pub(crate) struct Wire {
    version: u64,
    subset: SubsetConfig,
    /// Each distinct label once, in the order hosts first name them.
    labels: Vec<Label>,
    hosts: Vec<WireHost>,
}

#[derive(rkyv::Archive, rkyv::Serialize)]
pub(crate) struct Label {
    key: String,
    value: String,
}

#[derive(rkyv::Archive, rkyv::Serialize)]
pub(crate) struct WireHost {
    address: String,
    weight: u32,
    healthy: bool,
    /// Positions in [`Wire::labels`], keys ascending.
    labels: Vec<u32>,
}

/// `archive` behind a header of `magic` and [`FORMAT`].
pub(crate) fn frame(magic: &[u8; 14], archive: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + archive.len());
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&FORMAT.to_le_bytes());
    bytes.extend_from_slice(archive);
    bytes
}

/// The archive behind a header of `magic` and [`FORMAT`].
pub(crate) fn unframe<'a>(magic: &[u8; 14], bytes: &'a [u8]) -> Result<&'a [u8], HostTableError> {
    let (header, archive) = bytes
        .split_at_checked(HEADER)
        .ok_or(HostTableError::Malformed)?;
    if header[..14] != magic[..] {
        return Err(HostTableError::Malformed);
    }
    match u16::from_le_bytes([header[14], header[15]]) {
        FORMAT => Ok(archive),
        found => Err(HostTableError::UnsupportedFormat {
            found,
            supported: FORMAT,
        }),
    }
}

/// The framed bytes of `table`, not validated (the caller has, or a test wants them invalid).
pub(crate) fn encode<'a>(table: &'a HostTable) -> Result<Vec<u8>, HostTableError> {
    let mut positions: HashMap<(&str, &str), u32, FixedState> = HashMap::default();
    let mut labels = Vec::new();
    let mut position = |k: &'a str, v: &'a str| {
        *positions.entry((k, v)).or_insert_with(|| {
            labels.push(Label {
                key: k.into(),
                value: v.into(),
            });
            labels.len() as u32 - 1
        })
    };
    let hosts = (table.hosts.iter())
        .map(|h| WireHost {
            address: h.address.clone(),
            weight: h.weight,
            healthy: h.healthy,
            labels: h.labels.iter().map(|(k, v)| position(k, v)).collect(),
        })
        .collect();
    let wire = Wire {
        version: table.version,
        subset: table.subset.clone(),
        labels,
        hosts,
    };
    let archive = rkyv::to_bytes::<rkyv::rancor::Failure>(&wire)
        .map_err(|_| HostTableError::TooLargeToEncode)?;
    Ok(frame(&TABLE_MAGIC, &archive))
}

/// A table's archive read in place: checked byte by byte, every label position naming a
/// label; its rules are [`Checked::validate`]'s, or the build's as it goes.
pub(crate) struct Checked<'a> {
    pub(crate) version: u64,
    pub(crate) config: SubsetConfig,
    pub(crate) labels: &'a [ArchivedLabel],
    pub(crate) hosts: &'a [ArchivedWireHost],
}

impl ArchivedLabel {
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    pub(crate) fn value(&self) -> &str {
        &self.value
    }
}

impl ArchivedWireHost {
    pub(crate) fn address(&self) -> &str {
        &self.address
    }

    pub(crate) fn weight(&self) -> u32 {
        self.weight.to_native()
    }

    pub(crate) fn healthy(&self) -> bool {
        self.healthy
    }

    /// Positions of its labels in the table's labels.
    pub(crate) fn labels(&self) -> impl Iterator<Item = usize> + Clone {
        self.labels.iter().map(|p| p.to_native() as usize)
    }
}

/// Reads the table archived in `bytes` in place: checks the archive byte by byte and that every
/// label position names a label, and hands the table to `read`. Not validated: see
/// [`Checked::validate`].
pub(crate) fn read<R>(
    bytes: &[u8],
    read: impl FnOnce(Checked<'_>) -> R,
) -> Result<R, HostTableError> {
    let aligned = Aligned::new(unframe(&TABLE_MAGIC, bytes)?);
    let wire: &ArchivedWire = aligned.access()?;
    let config = deserialize_config(&wire.subset)?;
    let (labels, hosts) = (&wire.labels[..], &wire.hosts[..]);
    let count = labels.len();
    if hosts.iter().any(|h| h.labels().any(|p| p >= count)) {
        return Err(HostTableError::Malformed);
    }
    Ok(read(Checked {
        version: wire.version.to_native(),
        config,
        labels,
        hosts,
    }))
}

impl<'a> Checked<'a> {
    /// Checks the table as [`HostTable::validate`] checks an owned one.
    pub(crate) fn validate(&self) -> Result<(), HostTableError> {
        let views: Vec<View<'_>> = self.hosts.iter().map(|h| self.view(h)).collect();
        validate::parts(&views, &self.config)
    }

    /// `host` with the table's labels, as the validation reads it.
    pub(crate) fn view(&self, host: &'a ArchivedWireHost) -> View<'a> {
        View {
            host,
            labels: self.labels,
        }
    }

    /// The table, owned.
    pub(crate) fn to_table(&self) -> HostTable {
        let host = |h: &ArchivedWireHost| Host {
            address: h.address().into(),
            weight: h.weight(),
            healthy: h.healthy(),
            labels: (h.labels().map(|p| &self.labels[p]))
                .map(|l| (l.key().into(), l.value().into()))
                .collect::<BTreeMap<_, _>>(),
        };
        HostTable {
            version: self.version,
            hosts: self.hosts.iter().map(host).collect(),
            subset: self.config.clone(),
        }
    }
}

/// An archived host with the table's labels, as the validation reads it.
pub(crate) struct View<'a> {
    host: &'a ArchivedWireHost,
    labels: &'a [ArchivedLabel],
}

impl super::HostView for View<'_> {
    // Positions come in whatever order the encoder wrote.
    const ORDERED: bool = false;

    fn address(&self) -> &str {
        self.host.address()
    }

    fn weight(&self) -> u32 {
        self.host.weight()
    }

    fn label_count(&self) -> usize {
        self.host.labels.len()
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        let label = |p: usize| &self.labels[p];
        (self.host.labels().map(label)).map(|l| (l.key(), l.value()))
    }
}
