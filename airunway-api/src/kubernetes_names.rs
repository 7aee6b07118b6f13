//! The Kubernetes name and label grammars (pure), as the API server applies them: DNS labels
//! and subdomains, label keys and values, qualified names, extended resource names and the size
//! of annotations. One definition for every AI Runway binary.

/// Longest DNS label (RFC 1123 and RFC 1035).
pub const MAX_DNS_LABEL_LENGTH: usize = 63;

/// Longest DNS subdomain (RFC 1123).
pub const MAX_DNS_SUBDOMAIN_LENGTH: usize = 253;

/// Longest label value and name part of a qualified name.
pub const MAX_LABEL_VALUE_LENGTH: usize = 63;

/// Largest total of an object's annotation keys and values the API server stores (256 KiB).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

fn lower_alphanumeric(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// A DNS-1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters (Service names).
pub fn is_dns1035_label(s: &str) -> bool {
    s.len() <= MAX_DNS_LABEL_LENGTH
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(lower_alphanumeric)
        && s.chars().all(|c| lower_alphanumeric(c) || c == '-')
}

/// A DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters (namespace names).
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_DNS_LABEL_LENGTH
        && s.starts_with(lower_alphanumeric)
        && s.ends_with(lower_alphanumeric)
        && s.chars().all(|c| lower_alphanumeric(c) || c == '-')
}

/// A DNS-1123 subdomain: DNS-1123 labels joined by `.`, at most 253 characters (most object
/// names, e.g. a Secret's).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= MAX_DNS_SUBDOMAIN_LENGTH && s.split('.').all(is_dns1123_label)
}

/// The name part of a qualified name: 1 to 63 letters, digits, `-`, `_` or `.`, starting and
/// ending with a letter or digit.
pub fn is_label_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_LABEL_VALUE_LENGTH
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A qualified name (label, annotation and taint keys): an optional DNS-1123 subdomain prefix
/// and `/`, then a [label name](is_label_name).
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

/// A label value: empty, or a [label name](is_label_name).
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

/// An extended resource name the API server accepts in container resource limits: a qualified
/// name with a domain prefix outside `kubernetes.io` (and not `requests.`-prefixed).
pub fn is_extended_resource_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, _)) => {
            is_qualified_name(s)
                && prefix != "kubernetes.io"
                && !prefix.ends_with(".kubernetes.io")
                && !prefix.starts_with("requests.")
        }
        None => false,
    }
}

/// The size of annotations as the API server counts it: keys and values, in bytes.
pub fn annotations_size<'a>(
    annotations: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> usize {
    annotations
        .into_iter()
        .map(|(key, value)| key.len() + value.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        assert!(is_dns1035_label("a-1"));
        assert!(!is_dns1035_label("1a"));
        assert!(!is_dns1035_label(""));
        assert!(is_dns1123_label("1a"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain(&format!("{}.a", "a".repeat(252))));
        assert!(is_qualified_name("example.com/My_Key.1"));
        assert!(!is_qualified_name("/a"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("Ex.com/a"));
        assert!(is_label_value(""));
        assert!(!is_label_value("-a"));
        assert!(is_extended_resource_name("nvidia.com/gpu"));
        for bad in [
            "gpu",
            "kubernetes.io/gpu",
            "a.kubernetes.io/x",
            "requests.a/b",
            "a.com/",
        ] {
            assert!(!is_extended_resource_name(bad), "{bad}");
        }
        let annotations = std::collections::BTreeMap::from([("ab".to_string(), "cde".to_string())]);
        assert_eq!(annotations_size(&annotations), 5);
    }

    proptest! {
        // Strings drawn from each grammar's regular expression are accepted.
        #[test]
        fn drawn_from_the_grammar_are_accepted(
            dns1035 in "[a-z]([-a-z0-9]{0,61}[a-z0-9])?",
            dns1123 in "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
            subdomain in "[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?){0,5}",
            name in "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
        ) {
            prop_assert!(is_dns1035_label(&dns1035));
            prop_assert!(is_dns1123_label(&dns1123));
            prop_assert!(is_dns1123_subdomain(&subdomain));
            prop_assert!(is_label_name(&name));
            prop_assert!(is_label_value(&name));
            prop_assert!(is_qualified_name(&name));
            let qualified = format!("{subdomain}/{name}");
            prop_assert!(is_qualified_name(&qualified));
            prop_assert_eq!(
                is_extended_resource_name(&qualified),
                !subdomain.starts_with("requests.")
                    && subdomain != "kubernetes.io"
                    && !subdomain.ends_with(".kubernetes.io")
            );
        }

        // Any string: each check is the grammar's definition, written another way.
        #[test]
        fn any_string_is_judged_by_the_definition(s in "[-a-zA-Z0-9_./ ]{0,70}") {
            let chars: Vec<char> = s.chars().collect();
            let label_like = |allowed: &dyn Fn(char) -> bool, edge: &dyn Fn(char) -> bool| {
                !chars.is_empty()
                    && chars.len() <= 63
                    && edge(chars[0])
                    && edge(chars[chars.len() - 1])
                    && chars.iter().all(|c| allowed(*c))
            };
            let lower = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
            prop_assert_eq!(
                is_dns1123_label(&s),
                label_like(&|c| lower(c) || c == '-', &lower)
            );
            prop_assert_eq!(
                is_dns1035_label(&s),
                label_like(&|c| lower(c) || c == '-', &lower) && chars[0].is_ascii_lowercase()
            );
            let alnum = |c: char| c.is_ascii_alphanumeric();
            prop_assert_eq!(
                is_label_name(&s),
                label_like(&|c| alnum(c) || "-_.".contains(c), &alnum)
            );
            prop_assert_eq!(is_label_value(&s), s.is_empty() || is_label_name(&s));
        }
    }
}
