//! NCCL's and gloo's interface selection, as their documentation states it.

use cudoctor_snapshot::{NetInterface, NetworkFacts};

/// `NCCL_SOCKET_IFNAME` / `NCCL_IB_HCA`: a comma list of name prefixes; a leading `^` makes it
/// an exclusion list; a leading `=` (after `^`) makes entries exact names (NCCL's environment
/// variable documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcclNameFilter {
    pub exclude: bool,
    pub exact: bool,
    pub entries: Vec<String>,
}

impl NcclNameFilter {
    pub fn parse(value: &str) -> NcclNameFilter {
        let mut v = value.trim();
        let exclude = v.starts_with('^');
        if exclude {
            v = &v[1..];
        }
        let exact = v.starts_with('=');
        if exact {
            v = &v[1..];
        }
        let entries = v
            .split(',')
            .map(|e| e.trim())
            // NCCL_IB_HCA entries may carry `:port`.
            .map(|e| e.split(':').next().unwrap_or(e).to_string())
            .filter(|e| !e.is_empty())
            .collect();
        NcclNameFilter {
            exclude,
            exact,
            entries,
        }
    }

    fn entry_matches(&self, entry: &str, name: &str) -> bool {
        if self.exact {
            name == entry
        } else {
            name.starts_with(entry)
        }
    }

    /// True when NCCL would consider `name`.
    pub fn admits(&self, name: &str) -> bool {
        let hit = self.entries.iter().any(|e| self.entry_matches(e, name));
        hit != self.exclude
    }

    /// Entries of an inclusion list that match no name at all.
    pub fn unmatched<'a>(&'a self, names: &[&str]) -> Vec<&'a str> {
        if self.exclude {
            return Vec::new();
        }
        self.entries
            .iter()
            .filter(|e| !names.iter().any(|n| self.entry_matches(e, n)))
            .map(String::as_str)
            .collect()
    }
}

/// Interfaces NCCL's socket transport would pick from under `filter`. Without a filter NCCL
/// skips `lo` and `docker*`; with one, only the filter decides.
pub fn nccl_candidates<'a>(
    net: &'a NetworkFacts,
    filter: &NcclNameFilter,
) -> Vec<&'a NetInterface> {
    net.interfaces
        .iter()
        .filter(|i| filter.admits(&i.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_filter_syntax() {
        let f = NcclNameFilter::parse("eth,ib");
        assert!(f.admits("eth0") && f.admits("ib1") && !f.admits("lo"));
        assert_eq!(f.unmatched(&["eth0", "lo"]), vec!["ib"]);
        let f = NcclNameFilter::parse("=eth0");
        assert!(f.admits("eth0") && !f.admits("eth01"));
        let f = NcclNameFilter::parse("^docker,lo");
        assert!(!f.admits("docker0") && !f.admits("lo") && f.admits("eth0"));
        let f = NcclNameFilter::parse("^=docker0");
        assert!(!f.admits("docker0") && f.admits("docker1"));
        let f = NcclNameFilter::parse("mlx5_0:1,mlx5_1");
        assert_eq!(f.entries, ["mlx5_0", "mlx5_1"]);
    }
}
