//! Why the subset load balancer refused a table or an update.

use alloc::string::String;

use crate::HostTableError;

/// Why [`SubsetLb::build`](crate::SubsetLb::build) or an update was refused. The load balancer
/// is unchanged after an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubsetError {
    /// The table, or the host given to an update, breaks a rule of
    /// [`HostTable::validate`](crate::HostTable::validate).
    #[error(transparent)]
    Table(#[from] HostTableError),
    /// No host has this address.
    #[error("no host with address \"{0}\"")]
    UnknownHost(String),
    /// A host with this address is already in the table.
    #[error("a host with address \"{0}\" is already in the table")]
    DuplicateAddress(String),
    /// A [`HostDelta`](crate::HostDelta) from another version than the index's.
    #[error("host delta from version {from}, but the index is at version {version}")]
    DeltaBase {
        /// The index's version.
        version: u64,
        /// The version the delta applies to.
        from: u64,
    },
    /// The table already has [`MAX_HOSTS`](crate::MAX_HOSTS) hosts.
    #[error("host table full: at most {max} hosts", max = crate::MAX_HOSTS)]
    Full,
    /// The hosts' addresses together pass 4 GiB, or their key=value ids (one per label, or
    /// per list item with `list_as_any`) pass 2^32: more than the index addresses.
    #[error("host table too large: over 4 GiB of addresses or 2^32 label values")]
    TooLarge,
}
