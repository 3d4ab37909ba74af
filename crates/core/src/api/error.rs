//! The body of every error the Worker answers, read by its clients (the reporter, `acoctl`,
//! the test kit) to decide what to do: retry, drop one item of a batch, or stop and say why.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong, for a person.
    pub error: String,
    /// The request field at fault (`placements[3].node`, `nodes`, a header name), if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// In a batch, the index of the one item refused for good: the rest may be sent again
    /// without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
}

impl ErrorBody {
    /// The body of `text`, if it is one (a proxy's or the runtime's own error page is not).
    pub fn parse(text: &str) -> Option<ErrorBody> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_members_are_left_out_and_foreign_bodies_are_not_errors() {
        let body = ErrorBody {
            error: "bad".into(),
            field: Some("placements[3].node".into()),
            item: Some(3),
        };
        let text = serde_json::to_string(&body).unwrap();
        assert_eq!(ErrorBody::parse(&text), Some(body));
        let bare = ErrorBody {
            error: "down".into(),
            ..ErrorBody::default()
        };
        assert_eq!(serde_json::to_string(&bare).unwrap(), r#"{"error":"down"}"#);
        // Extra members (a batch's per-tenant results) do not stop it parsing.
        let extra = r#"{"error":"x","tenants":{"a":{"committed":true}}}"#;
        assert_eq!(ErrorBody::parse(extra).unwrap().error, "x");
        assert_eq!(ErrorBody::parse("<html>502</html>"), None);
    }
}
