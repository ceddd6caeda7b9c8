//! Delegated authentication: who holds this bearer token, as the API server says in a
//! TokenReview (authentication.k8s.io/v1).
//!
//! Answers, "authenticated as X" and "not authenticated" alike, are kept for
//! `--authentication-token-webhook-cache-ttl` (10s), as upstream's token cache does; a failed
//! review call is not kept, so the next request asks again. Tokens are kept only as SHA-256
//! digests.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::Client;

use super::cache::{review, TtlCache};

/// An authenticated user, as the TokenReview named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The uid, when the API server gave one.
    pub uid: Option<String>,
    /// The groups.
    pub groups: Vec<String>,
    /// Extra attributes, passed on to SubjectAccessReviews.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// A TokenReview could not be made.
#[derive(Debug, thiserror::Error)]
#[error("TokenReview failed: {0}")]
pub struct AuthnError(pub kube::Error);

type Digest = [u8; 32];

/// Checks bearer tokens with TokenReviews.
pub struct TokenAuthenticator {
    client: Client,
    ttl: Duration,
    cache: TtlCache<Digest, Option<User>>,
}

impl TokenAuthenticator {
    /// Reviews tokens through `client`, keeping answers for `ttl`.
    pub fn new(client: Client, ttl: Duration) -> Self {
        Self {
            client,
            ttl,
            cache: TtlCache::new(),
        }
    }

    /// The user `token` belongs to; `None` when the API server does not recognise it.
    pub async fn authenticate(&self, token: &str) -> Result<Option<User>, AuthnError> {
        let answer = async {
            let asked = TokenReview {
                spec: TokenReviewSpec {
                    token: Some(token.to_owned()),
                    ..TokenReviewSpec::default()
                },
                ..TokenReview::default()
            };
            let answer = review(&self.client, &asked).await.map_err(AuthnError)?;
            Ok(answer
                .status
                .filter(|s| s.authenticated == Some(true))
                .and_then(|s| s.user)
                .and_then(|u| {
                    Some(User {
                        name: u.username.filter(|n| !n.is_empty())?,
                        uid: u.uid.filter(|uid| !uid.is_empty()),
                        groups: u.groups.unwrap_or_default(),
                        extra: u.extra.unwrap_or_default(),
                    })
                }))
        };
        self.cache
            .get_or_fetch(digest(token), answer, |_| self.ttl)
            .await
    }
}

fn digest(token: &str) -> Digest {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0; 32];
    out.copy_from_slice(digest.as_ref());
    out
}
