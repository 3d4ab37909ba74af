//! The 503 to a batch (`POST /v1/placements`, `POST /v1/shadow`) some of whose tenants'
//! colonies failed ([`BatchFailure`]): the error body and what each tenant's colony did with its
//! part ([`TenantCommit`]). Tenants are separate Durable Objects, so a batch cannot commit
//! atomically across them; the reply says which committed, and a retry of the whole batch is
//! exact because a committed pod is a duplicate the second time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::dropped::DropReason;
use super::error::ErrorBody;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchFailure {
    #[serde(flatten)]
    pub error: ErrorBody,
    /// Every tenant of the batch, failed or not.
    pub tenants: BTreeMap<String, TenantCommit>,
}

/// One tenant's part of a failed batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantCommit {
    pub committed: bool,
    /// The tenant's colony was not admitted (not allowed, or beyond `MAX_COLONIES`): its pods
    /// were counted as unknown, and a retry would not change that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Why the colony failed (worth a retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the colony did with a placements batch it committed (a shadow batch's tenants say
    /// only that they committed).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<TenantApplied>,
}

impl TenantCommit {
    /// The colony failed with `error`.
    pub fn failed(error: impl Into<String>) -> Self {
        TenantCommit {
            committed: false,
            refused: None,
            error: Some(error.into()),
            applied: None,
        }
    }

    /// The colony was not admitted, for `why`.
    pub fn refused(why: impl Into<String>) -> Self {
        TenantCommit {
            committed: false,
            refused: Some(why.into()),
            error: None,
            applied: None,
        }
    }

    /// The colony committed its part (`applied`: what it did, when it says).
    pub fn committed(applied: Option<TenantApplied>) -> Self {
        TenantCommit {
            committed: true,
            refused: None,
            error: None,
            applied,
        }
    }
}

/// A committed tenant's part of a placements batch (the counts of `PlacementsSummary`, for this
/// tenant alone, and the items its colony dropped as invalid, by reason).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantApplied {
    pub deposited: u64,
    pub outcomes: u64,
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_a_candidate: u64,
    pub held: u64,
    pub dropped: BTreeMap<DropReason, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_failure_has_fixed_bytes_and_parses_back() {
        let failure = BatchFailure {
            error: ErrorBody {
                error: "1 of 3 tenants' colonies failed".into(),
                ..ErrorBody::default()
            },
            tenants: BTreeMap::from([
                (
                    "a".to_string(),
                    TenantCommit::committed(Some(TenantApplied {
                        deposited: 3,
                        dropped: BTreeMap::from([(DropReason::InvalidPlacement, 1)]),
                        ..TenantApplied::default()
                    })),
                ),
                ("b".to_string(), TenantCommit::failed("colony unavailable")),
                ("c".to_string(), TenantCommit::refused("over MAX_COLONIES")),
                ("d".to_string(), TenantCommit::committed(None)),
            ]),
        };
        let bytes = concat!(
            r#"{"error":"1 of 3 tenants' colonies failed","tenants":{"#,
            r#""a":{"committed":true,"deposited":3,"outcomes":0,"duplicates":0,"unknownPod":0,"notACandidate":0,"held":0,"dropped":{"invalid_placement":1}},"#,
            r#""b":{"committed":false,"error":"colony unavailable"},"#,
            r#""c":{"committed":false,"refused":"over MAX_COLONIES"},"#,
            r#""d":{"committed":true}}}"#
        );
        assert_eq!(serde_json::to_string(&failure).unwrap(), bytes);
        assert_eq!(
            serde_json::from_str::<BatchFailure>(bytes).unwrap(),
            failure
        );
    }
}
