//! Who may call the extender verbs (`filter`, `prioritize`, `bind`), chosen by `EXTENDER_AUTH`.
//!
//! kube-scheduler sends no headers of its own, so the only credentials it can present are a TLS
//! client certificate (`tlsConfig.certData/keyData`; on Cloudflare, API Shield mTLS, which the
//! Worker sees as `request.cf.tlsClientAuth`) and whatever is in its `urlPrefix`:
//!
//! | `EXTENDER_AUTH` | the verb is served when |
//! |---|---|
//! | `none` | always (local development; must be set explicitly) |
//! | `path-token` | the path is `/t/<token>/v1/<verb>` with `<token>` one of `EXTENDER_TOKENS` (comma-separated, at most two at a time for rotation; each 32–256 characters of `[A-Za-z0-9_-]`), compared in constant time |
//! | `mtls` | `certVerified == "SUCCESS"` and the certificate's SHA-256 fingerprint is in `EXTENDER_CERT_FINGERPRINTS` or its issuer DN in `EXTENDER_CERT_ISSUERS` |
//!
//! Pure: the Worker hands over the path segments and the certificate facts.

use crate::config::ConfigError;

/// The configured way to authenticate extender verbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtenderAuth {
    None,
    PathToken {
        tokens: Vec<String>,
    },
    Mtls {
        fingerprints: Vec<String>,
        issuers: Vec<String>,
    },
}

/// What `request.cf.tlsClientAuth` says about the client certificate (empty strings when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientCert {
    pub cert_verified: String,
    pub fingerprint_sha256: String,
    pub issuer_dn: String,
}

/// Why a verb was refused: `status` 401 (no or a wrong credential) or 403 (a verified certificate
/// that is not allowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

/// The vars and secrets of this module and of the bearer tokens, as docs/configuration.md shows
/// them (generated: `crates/core/tests/config_doc.rs`; a test there fails when `from_vars` reads
/// a key not listed here).
pub fn documented_vars() -> Vec<crate::config_doc::VarDoc> {
    use crate::config_doc::VarDoc;
    let secret = "a secret (`wrangler secret put`), never a var";
    vec![
        VarDoc {
            keys: &["EXTENDER_AUTH"],
            default: "(none: required)".into(),
            format: "`none`, `path-token` or `mtls`",
            checks: &["unset or unknown: 503 naming it"],
            doc: &["Who may call the extender verbs (filter, prioritize, bind). `path-token`: \
                    only at `/t/<token>/v1/<verb>`; `mtls`: a verified, allowed client \
                    certificate (API Shield, a custom domain); `none`: anyone (local \
                    development only; `scripts/check-deploy` refuses it in `wrangler.toml`, \
                    which ships `path-token`)."],
        },
        VarDoc {
            keys: &["EXTENDER_TOKENS"],
            default: "(none)".into(),
            format: secret,
            checks: &["one token, or `current,next` while rotating; each 32–256 characters of `[A-Za-z0-9_-]`"],
            doc: &["`path-token`: the tokens the verbs' path may carry, compared in constant time."],
        },
        VarDoc {
            keys: &["EXTENDER_CERT_FINGERPRINTS", "EXTENDER_CERT_ISSUERS"],
            default: "(none)".into(),
            format: "comma-separated SHA-256 fingerprints (64 hex digits, `:` allowed); `;`-separated issuer DNs",
            checks: &["`mtls` needs at least one of the two"],
            doc: &["`mtls`: the client certificates allowed, by fingerprint and/or by issuer \
                    (401 without a verified certificate, 403 for one not allowed)."],
        },
        VarDoc {
            keys: &["ADMIN_TOKEN"],
            default: "(none)".into(),
            format: secret,
            checks: &["one token, or `current,next` while rotating; each 32–256 printable characters without spaces or commas, not guessable (e.g. `openssl rand -hex 32`)"],
            doc: &["Bearer token of the admin and ingest routes (the reporter's token, acoctl's). \
                    Unset or unusable: those routes answer 503, never open."],
        },
        VarDoc {
            keys: &["METRICS_TOKEN"],
            default: "(none)".into(),
            format: secret,
            checks: &["as `ADMIN_TOKEN`"],
            doc: &["Bearer token of `GET /metrics` (Prometheus' scrape credential)."],
        },
    ]
}

pub const MIN_TOKEN_LEN: usize = 32;
pub const MAX_TOKEN_LEN: usize = 256;
/// The current token and the next one, during a rotation.
pub const MAX_TOKENS: usize = 2;

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl ExtenderAuth {
    /// Reads `EXTENDER_AUTH` (required), `EXTENDER_TOKENS`, `EXTENDER_CERT_FINGERPRINTS`,
    /// `EXTENDER_CERT_ISSUERS` (the last three: `;` also separates issuers, whose DNs contain commas).
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let err = |key: &str, value: &str, reason: &str| ConfigError {
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        };
        let mode = lookup("EXTENDER_AUTH")
            .ok_or_else(|| err("EXTENDER_AUTH", "", "must be set: none, path-token or mtls"))?;
        match mode.trim() {
            "none" => Ok(ExtenderAuth::None),
            "path-token" => {
                let raw = lookup("EXTENDER_TOKENS").unwrap_or_default();
                let tokens = list(&raw);
                if tokens.is_empty() || tokens.len() > MAX_TOKENS {
                    return Err(err(
                        "EXTENDER_TOKENS",
                        "<secret>",
                        "path-token needs one or two comma-separated tokens",
                    ));
                }
                for t in &tokens {
                    let ok = (MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&t.len())
                        && t.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
                    if !ok {
                        return Err(err(
                            "EXTENDER_TOKENS",
                            "<secret>",
                            "each token must be 32–256 characters of [A-Za-z0-9_-]",
                        ));
                    }
                }
                Ok(ExtenderAuth::PathToken { tokens })
            }
            "mtls" => {
                let fingerprints: Vec<String> = lookup("EXTENDER_CERT_FINGERPRINTS")
                    .map(|v| {
                        list(&v)
                            .into_iter()
                            .map(|f| f.to_ascii_lowercase().replace(':', ""))
                            .collect()
                    })
                    .unwrap_or_default();
                for f in &fingerprints {
                    if f.len() != 64 || !f.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(err(
                            "EXTENDER_CERT_FINGERPRINTS",
                            f,
                            "expected SHA-256 fingerprints, 64 hex digits each",
                        ));
                    }
                }
                let issuers: Vec<String> = lookup("EXTENDER_CERT_ISSUERS")
                    .map(|v| {
                        v.split(';')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                if fingerprints.is_empty() && issuers.is_empty() {
                    return Err(err(
                        "EXTENDER_CERT_FINGERPRINTS",
                        "",
                        "mtls needs EXTENDER_CERT_FINGERPRINTS or EXTENDER_CERT_ISSUERS",
                    ));
                }
                Ok(ExtenderAuth::Mtls {
                    fingerprints,
                    issuers,
                })
            }
            other => Err(err(
                "EXTENDER_AUTH",
                other,
                "expected none, path-token or mtls",
            )),
        }
    }

    pub fn mode(&self) -> &'static str {
        match self {
            ExtenderAuth::None => "none",
            ExtenderAuth::PathToken { .. } => "path-token",
            ExtenderAuth::Mtls { .. } => "mtls",
        }
    }

    /// Whether an extender verb may be served. `token` is the `<token>` of a `/t/<token>/…`
    /// path (None without the prefix); `cert` is `request.cf.tlsClientAuth` (None when absent).
    pub fn check(&self, token: Option<&str>, cert: Option<&ClientCert>) -> Result<(), Refusal> {
        let refuse = |status: u16, message: &str| {
            Err(Refusal {
                status,
                message: message.into(),
            })
        };
        match self {
            ExtenderAuth::None => Ok(()),
            ExtenderAuth::PathToken { tokens } => {
                let Some(given) = token else {
                    return refuse(401, "extender verbs need the token path: urlPrefix https://<host>/t/<token>/v1 (EXTENDER_AUTH=path-token)");
                };
                // Every configured token is compared, whatever matched first.
                let mut ok = false;
                for t in tokens {
                    ok |= constant_time_eq(given.as_bytes(), t.as_bytes());
                }
                if ok {
                    Ok(())
                } else {
                    refuse(401, "invalid extender token")
                }
            }
            ExtenderAuth::Mtls {
                fingerprints,
                issuers,
            } => {
                let Some(cert) = cert.filter(|c| c.cert_verified == "SUCCESS") else {
                    return refuse(401, "extender verbs need a verified TLS client certificate (EXTENDER_AUTH=mtls)");
                };
                let fingerprint = cert
                    .fingerprint_sha256
                    .to_ascii_lowercase()
                    .replace(':', "");
                if fingerprints.contains(&fingerprint) || issuers.contains(&cert.issuer_dn) {
                    Ok(())
                } else {
                    refuse(403, "client certificate not allowed (EXTENDER_CERT_FINGERPRINTS / EXTENDER_CERT_ISSUERS)")
                }
            }
        }
    }
}

/// A bearer credential the Worker keeps as a secret — `ADMIN_TOKEN` (admin and ingest routes)
/// or `METRICS_TOKEN` (`/metrics`): one token, or two comma-separated while rotating. A value
/// anyone could guess is refused as a configuration error, so an admin route is never served
/// with it: each token is 32–256 printable ASCII characters (no spaces or commas) with at least
/// [`MIN_DISTINCT_CHARS`] different characters (which rules out repeated words and runs), and
/// not one this project ever published ([`PUBLISHED_TOKENS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerTokens {
    tokens: Vec<String>,
}

/// Different characters a bearer token has at least (a random hex token of 32 characters has ~14, of 64 all 16).
pub const MIN_DISTINCT_CHARS: usize = 10;
/// Tokens that appeared in this project's configuration or docs: never accepted.
pub const PUBLISHED_TOKENS: &[&str] = &["dev-admin-token"];

impl BearerTokens {
    /// The configured secret `key` (its value `None` when unset).
    pub fn from_secret(key: &str, value: Option<&str>) -> Result<Self, ConfigError> {
        let err = |reason: String| ConfigError {
            key: key.into(),
            value: "<secret>".into(),
            reason,
        };
        let value =
            value.ok_or_else(|| err("is not set (wrangler secret put ".to_string() + key + ")"))?;
        let tokens = list(value);
        if tokens.is_empty() || tokens.len() > MAX_TOKENS {
            return Err(err(
                "must be one token, or two comma-separated while rotating".into(),
            ));
        }
        for t in &tokens {
            let distinct = t.bytes().collect::<std::collections::BTreeSet<u8>>().len();
            if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&t.len())
                || !t.bytes().all(|b| b.is_ascii_graphic() && b != b',')
            {
                return Err(err(format!(
                    "each token must be {MIN_TOKEN_LEN}–{MAX_TOKEN_LEN} printable characters without spaces or commas (e.g. openssl rand -hex 32)"
                )));
            }
            if distinct < MIN_DISTINCT_CHARS || PUBLISHED_TOKENS.contains(&t.as_str()) {
                return Err(err(
                    "is a guessable value; generate one (e.g. openssl rand -hex 32)".into(),
                ));
            }
        }
        Ok(Self { tokens })
    }

    /// Whether an `Authorization` header carries one of the tokens (every token is compared,
    /// in constant time, whatever matched first).
    pub fn check(&self, authorization: Option<&str>) -> Result<(), Refusal> {
        let refuse = |message: &str| {
            Err(Refusal {
                status: 401,
                message: message.into(),
            })
        };
        let Some(given) = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
        else {
            return refuse("missing Authorization: Bearer <token>");
        };
        let mut ok = false;
        for t in &self.tokens {
            ok |= constant_time_eq(given.as_bytes(), t.as_bytes());
        }
        if ok {
            Ok(())
        } else {
            refuse("invalid bearer token")
        }
    }
}

/// Splits a `/t/<token>/rest…` path's segments into the token and the rest.
pub fn split_token<'a, 'b>(segments: &'b [&'a str]) -> (Option<&'a str>, &'b [&'a str]) {
    match segments {
        ["t", token, rest @ ..] => (Some(*token), rest),
        _ => (None, segments),
    }
}

/// Equal only when identical; the time depends on the lengths only, not on where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() != b.len()) as u8;
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const T1: &str = "token-one-aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const T2: &str = "token-two-bbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn from(pairs: &[(&str, &str)]) -> Result<ExtenderAuth, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ExtenderAuth::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn bearer_tokens_that_can_be_guessed_are_refused_and_good_ones_checked() {
        const B1: &str = "9f2c61d0b7e84a35c1f09e7d6b2a4c58";
        const B2: &str = "3b7e0d9c1a5f48e26c0b9d7a4e1f3c82";
        for (value, why) in [
            (None, "not set"),
            (Some(""), "one token"),
            (Some("dev-admin-token"), "32"),
            (Some("changeme-changeme-changeme-changeme"), "guessable"),
            (Some("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), "guessable"),
            (
                Some("has space aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                "printable",
            ),
            (Some(&*format!("{B1},{B2},{B1}")), "two"),
        ] {
            let e = BearerTokens::from_secret("ADMIN_TOKEN", value).unwrap_err();
            assert_eq!(e.key, "ADMIN_TOKEN");
            assert!(e.reason.contains(why), "{value:?}: {}", e.reason);
            assert_eq!(e.value, "<secret>", "a secret is never echoed");
        }
        let both =
            BearerTokens::from_secret("METRICS_TOKEN", Some(&format!("{B1}, {B2}"))).unwrap();
        assert_eq!(both.check(Some(&format!("Bearer {B1}"))), Ok(()));
        assert_eq!(both.check(Some(&format!("Bearer {B2} "))), Ok(()));
        for header in [
            None,
            Some(B1),
            Some("Bearer "),
            Some("Bearer dev-admin-token"),
        ] {
            assert_eq!(both.check(header).unwrap_err().status, 401, "{header:?}");
        }
        // A base64 token (openssl rand -base64 32) is fine.
        assert!(BearerTokens::from_secret(
            "ADMIN_TOKEN",
            Some("q1Xc+7/Zp0Lk9bW2vT4nR8sY3uE6gH5j=")
        )
        .is_ok());
    }

    #[test]
    fn the_mode_must_be_explicit_and_valid() {
        assert_eq!(from(&[]).unwrap_err().key, "EXTENDER_AUTH");
        assert_eq!(
            from(&[("EXTENDER_AUTH", "open")]).unwrap_err().key,
            "EXTENDER_AUTH"
        );
        assert_eq!(
            from(&[("EXTENDER_AUTH", "none")]).unwrap(),
            ExtenderAuth::None
        );
        for tokens in [
            "",
            "short",
            "has space aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            &format!("{T1},{T2},{T1}"),
        ] {
            assert_eq!(
                from(&[("EXTENDER_AUTH", "path-token"), ("EXTENDER_TOKENS", tokens)])
                    .unwrap_err()
                    .key,
                "EXTENDER_TOKENS",
                "{tokens}"
            );
        }
        assert_eq!(
            from(&[("EXTENDER_AUTH", "mtls")]).unwrap_err().key,
            "EXTENDER_CERT_FINGERPRINTS"
        );
        assert_eq!(
            from(&[
                ("EXTENDER_AUTH", "mtls"),
                ("EXTENDER_CERT_FINGERPRINTS", "abc")
            ])
            .unwrap_err()
            .key,
            "EXTENDER_CERT_FINGERPRINTS"
        );
    }

    #[test]
    fn two_tokens_are_valid_at_once_and_nothing_else_is() {
        let auth = from(&[
            ("EXTENDER_AUTH", "path-token"),
            ("EXTENDER_TOKENS", &format!("{T1}, {T2}")),
        ])
        .unwrap();
        assert_eq!(auth.check(Some(T1), None), Ok(()));
        assert_eq!(auth.check(Some(T2), None), Ok(()));
        for wrong in [
            None,
            Some(""),
            Some(&T1[..T1.len() - 1]),
            Some("token-one-aaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
        ] {
            assert_eq!(
                auth.check(wrong, None).unwrap_err().status,
                401,
                "{wrong:?}"
            );
        }
    }

    #[test]
    fn mtls_needs_a_verified_certificate_with_an_allowed_fingerprint_or_issuer() {
        let fp = "AB".repeat(32);
        let auth = from(&[
            ("EXTENDER_AUTH", "mtls"),
            ("EXTENDER_CERT_FINGERPRINTS", &fp),
            ("EXTENDER_CERT_ISSUERS", "CN=ops CA,O=acme"),
        ])
        .unwrap();
        let cert = |v: &str, f: &str, i: &str| ClientCert {
            cert_verified: v.into(),
            fingerprint_sha256: f.into(),
            issuer_dn: i.into(),
        };
        assert_eq!(
            auth.check(None, Some(&cert("SUCCESS", &fp.to_lowercase(), ""))),
            Ok(())
        );
        assert_eq!(
            auth.check(None, Some(&cert("SUCCESS", "00", "CN=ops CA,O=acme"))),
            Ok(())
        );
        assert_eq!(
            auth.check(None, Some(&cert("SUCCESS", "00", "CN=other")))
                .unwrap_err()
                .status,
            403
        );
        assert_eq!(
            auth.check(None, Some(&cert("FAILED:self signed certificate", &fp, "")))
                .unwrap_err()
                .status,
            401
        );
        assert_eq!(
            auth.check(None, Some(&cert("NONE", "", "")))
                .unwrap_err()
                .status,
            401
        );
        assert_eq!(auth.check(Some(T1), None).unwrap_err().status, 401);
    }

    #[test]
    fn token_prefix_is_split_off() {
        assert_eq!(
            split_token(&["t", "abc", "v1", "filter"]),
            (Some("abc"), &["v1", "filter"][..])
        );
        assert_eq!(
            split_token(&["v1", "filter"]),
            (None, &["v1", "filter"][..])
        );
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(
            !constant_time_eq(b"secret", b"secreT")
                && !constant_time_eq(b"secret", b"secret2")
                && !constant_time_eq(b"", b"x")
        );
    }
}
