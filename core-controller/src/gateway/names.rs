//! Names of the objects the integration creates for a deployment (pure).
//!
//! - InferencePool and HTTPRoute: the deployment's name (a DNS subdomain, like theirs).
//! - Endpoint picker objects (ServiceAccount, Role, RoleBinding, ConfigMap, Deployment,
//!   Service): `<deployment>-epp`. The InferenceModelRewrite of its LoRA adapters:
//!   `<deployment>-adapters`. A Service name must be a DNS-1035 label (at most 63
//!   characters, a letter first, no dots), so a deployment name that cannot carry the suffix
//!   gets `epp-<shortened name>-<8 hex digits of its SHA-256>` instead: still unique, still
//!   recognisable.
//! - A provider-managed pool: the provider's `inferencePoolNamePattern` /
//!   `inferencePoolNamespace` with `{name}` and `{namespace}` replaced (default: the
//!   deployment's own name and namespace).

use sha2::{Digest, Sha256};

/// Longest DNS-1035 label.
const MAX_LABEL: usize = 63;

/// The pool, route and endpoint picker names of one deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// InferencePool name (controller-managed pools).
    pub pool: String,
    /// HTTPRoute name.
    pub route: String,
    /// Name of every endpoint picker object.
    pub epp: String,
    /// InferenceModelRewrite naming the deployment's LoRA adapters (`<deployment>-adapters`).
    pub rewrite: String,
}

impl Names {
    /// The names for deployment `name`.
    pub fn of(name: &str) -> Names {
        Names {
            pool: name.to_string(),
            route: name.to_string(),
            epp: epp_name(name),
            rewrite: format!("{name}-adapters"),
        }
    }
}

/// The endpoint picker name for deployment `name` (a DNS-1035 label).
pub fn epp_name(name: &str) -> String {
    let plain = format!("{name}-epp");
    let valid = plain.len() <= MAX_LABEL
        && plain.starts_with(|c: char| c.is_ascii_lowercase())
        && plain
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if valid {
        return plain;
    }
    let sanitized: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .take(46)
        .collect();
    let digest = Sha256::digest(name.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("epp-{}-{hash}", sanitized.trim_matches('-'))
}

/// A provider-managed pool's `<namespace>/<name>` from its capability's patterns.
pub fn provider_pool(
    name_pattern: Option<&str>,
    namespace_pattern: Option<&str>,
    name: &str,
    namespace: &str,
) -> (String, String) {
    let fill = |pattern: Option<&str>, default: &str| match pattern.filter(|p| !p.is_empty()) {
        Some(p) => p.replace("{name}", name).replace("{namespace}", namespace),
        None => default.to_string(),
    };
    (fill(namespace_pattern, namespace), fill(name_pattern, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_dns1035(s: &str) -> bool {
        s.len() <= 63
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && !s.ends_with('-')
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }

    #[test]
    fn short_names_take_the_suffix() {
        let names = Names::of("qwen3");
        assert_eq!(names.pool, "qwen3");
        assert_eq!(names.route, "qwen3");
        assert_eq!(names.epp, "qwen3-epp");
    }

    #[test]
    fn names_a_service_cannot_carry_are_shortened_with_a_hash() {
        let long = "a".repeat(62);
        let epp = epp_name(&long);
        assert!(is_dns1035(&epp), "{epp}");
        assert!(
            epp.starts_with(&format!("epp-{}-", "a".repeat(46))),
            "{epp}"
        );
        // Different long names stay different.
        assert_ne!(epp, epp_name(&format!("{}b", "a".repeat(61))));
        for name in ["7b-model", "llama.3.1", "x".repeat(253).as_str()] {
            let epp = epp_name(name);
            assert!(is_dns1035(&epp), "{name} -> {epp}");
        }
        assert_eq!(epp_name("llama.3.1"), epp_name("llama.3.1"), "stable");
    }

    #[test]
    fn provider_pool_patterns() {
        assert_eq!(
            provider_pool(Some("{name}-pool"), Some("{namespace}"), "qwen", "team-a"),
            ("team-a".to_string(), "qwen-pool".to_string())
        );
        assert_eq!(
            provider_pool(None, None, "qwen", "team-a"),
            ("team-a".to_string(), "qwen".to_string())
        );
        assert_eq!(
            provider_pool(
                Some("pool-{namespace}-{name}"),
                Some("pools"),
                "qwen",
                "team-a"
            ),
            ("pools".to_string(), "pool-team-a-qwen".to_string())
        );
    }
}
