//! Delegated authorization: may this user `get /metrics`? Asked of the API server in a
//! SubjectAccessReview (authorization.k8s.io/v1) with `nonResourceAttributes`.
//!
//! As upstream's delegating authorizer does, two checks come first and need no call: paths in
//! `--authorization-always-allow-paths` (`/healthz,/readyz,/livez`; a trailing `*` matches by
//! prefix, a leading `/` is optional) and members of `system:masters`. Allowed answers are
//! kept for `--authorization-webhook-cache-authorized-ttl`, denied ones for
//! `--authorization-webhook-cache-unauthorized-ttl` (10s each); a failed call is not kept.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;

use super::authn::User;
use super::cache::{review, TtlCache};

/// The group upstream lets do anything without asking (its `AlwaysAllowGroups` default).
const PRIVILEGED_GROUP: &str = "system:masters";

/// What the authorizer decided, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// The API server's reason, or which local rule decided.
    pub reason: String,
}

/// A SubjectAccessReview could not be made.
#[derive(Debug, thiserror::Error)]
#[error("SubjectAccessReview failed: {0}")]
pub struct AuthzError(pub kube::Error);

/// Paths served without asking anyone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlwaysAllowPaths(Vec<String>);

impl AlwaysAllowPaths {
    /// From `--authorization-always-allow-paths`.
    pub fn new(paths: &[String]) -> Self {
        Self(
            paths
                .iter()
                .map(|p| p.trim_start_matches('/').to_owned())
                .filter(|p| !p.is_empty())
                .collect(),
        )
    }

    /// Whether `path` is one of them.
    pub fn contains(&self, path: &str) -> bool {
        let path = path.trim_start_matches('/');
        self.0.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => p == path,
        })
    }
}

/// Decides with SubjectAccessReviews.
pub struct Authorizer {
    client: Client,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: TtlCache<String, Decision>,
}

impl Authorizer {
    /// Reviews through `client`, keeping allowed answers for `allowed_ttl` and denied ones
    /// for `denied_ttl`.
    pub fn new(client: Client, allowed_ttl: Duration, denied_ttl: Duration) -> Self {
        Self {
            client,
            allowed_ttl,
            denied_ttl,
            cache: TtlCache::new(),
        }
    }

    /// Whether `user` may `verb` the non-resource `path`.
    pub async fn authorize(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<Decision, AuthzError> {
        if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Ok(Decision {
                allowed: true,
                reason: format!("member of {PRIVILEGED_GROUP}"),
            });
        }
        // Everything the review carries is part of the key: the same user with other
        // groups may get another answer.
        let key =
            serde_json::to_string(&(&user.name, &user.uid, &user.groups, &user.extra, verb, path))
                .unwrap_or_else(|_| format!("{}\u{0}{verb}\u{0}{path}", user.name));
        let decision = async {
            let asked = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(user.name.clone()),
                    uid: user.uid.clone(),
                    groups: Some(user.groups.clone()),
                    extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
                    non_resource_attributes: Some(NonResourceAttributes {
                        path: Some(path.to_owned()),
                        verb: Some(verb.to_owned()),
                    }),
                    ..SubjectAccessReviewSpec::default()
                },
                ..SubjectAccessReview::default()
            };
            let answer = review(&self.client, &asked).await.map_err(AuthzError)?;
            let status = answer.status.unwrap_or_default();
            Ok(Decision {
                // An explicit denial wins, as upstream reads the answer.
                allowed: status.allowed && status.denied != Some(true),
                reason: status.reason.unwrap_or_default(),
            })
        };
        let ttl_of = |decision: &Decision| {
            if decision.allowed {
                self.allowed_ttl
            } else {
                self.denied_ttl
            }
        };
        self.cache.get_or_fetch(key, decision, ttl_of).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_allowed_paths_match_exactly_or_by_prefix_with_or_without_a_slash() {
        let paths = AlwaysAllowPaths::new(&[
            "/healthz".to_owned(),
            "readyz".to_owned(),
            "/debug/*".to_owned(),
        ]);
        assert!(paths.contains("/healthz"));
        assert!(paths.contains("/readyz"));
        assert!(paths.contains("/debug/pprof"));
        assert!(!paths.contains("/healthz/extra"));
        assert!(!paths.contains("/metrics"));
        assert!(!AlwaysAllowPaths::new(&[String::new()]).contains("/"));
    }
}
