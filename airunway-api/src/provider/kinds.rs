//! The kind table: the kinds a provider writes, its [upstream kind](Provider::upstream) first
//! and then its [secondary kinds](Provider::secondary_kinds), each addressed by a [`KindId`]
//! the table hands out (pure).

use super::desired::DesiredUpstream;
use super::traits::{Provider, UpstreamKind};

/// A kind of a provider's [`KindTable`]. Only the table makes one, so an id names one of its
/// kinds (tables of the same provider are equal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindId(usize);

impl KindId {
    /// The provider's upstream kind ([`Provider::upstream`]).
    pub const PRIMARY: KindId = KindId(0);
}

/// The kinds a provider writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindTable {
    primary: UpstreamKind,
    secondary: Vec<UpstreamKind>,
}

impl KindTable {
    /// The table of `provider`: its upstream kind, then its secondary kinds.
    pub fn of<P: Provider>(provider: &P) -> KindTable {
        KindTable::new(provider.upstream(), provider.secondary_kinds())
    }

    /// The table of `primary` and `secondary`.
    pub fn new(primary: UpstreamKind, secondary: Vec<UpstreamKind>) -> KindTable {
        KindTable { primary, secondary }
    }

    /// The upstream kind.
    pub fn primary(&self) -> &UpstreamKind {
        &self.primary
    }

    /// Whether the provider manages a set of objects of several kinds.
    pub fn has_secondary(&self) -> bool {
        !self.secondary.is_empty()
    }

    /// Every kind with its id, the upstream kind first.
    pub fn iter(&self) -> impl Iterator<Item = (KindId, &UpstreamKind)> {
        std::iter::once(&self.primary)
            .chain(&self.secondary)
            .enumerate()
            .map(|(i, kind)| (KindId(i), kind))
    }

    /// The kind of `id` (`None` only for an id of another provider's table).
    pub fn get(&self, id: KindId) -> Option<&UpstreamKind> {
        match id.0.checked_sub(1) {
            None => Some(&self.primary),
            Some(i) => self.secondary.get(i),
        }
    }

    /// The id of the declared kind of `desired`, if it is one.
    pub fn id_of(&self, desired: &DesiredUpstream) -> Option<KindId> {
        self.iter()
            .find(|(_, kind)| kind.kind == desired.kind() && kind.group == desired.group())
            .map(|(id, _)| id)
    }
}
