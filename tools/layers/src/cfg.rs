//! Which items are test code: `#[cfg(test)]` (also inside `all(..)`), `#[test]` and
//! `#[tokio::test]`-like attributes.

use syn::punctuated::Punctuated;
use syn::{Attribute, Meta, Token};

/// True when the attributes make the item exist only in test builds, or mark it as a test.
pub fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("cfg") {
            return match &attr.meta {
                Meta::List(list) => list
                    .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                    .map(|metas| metas.len() == 1 && requires_test(&metas[0]))
                    .unwrap_or(false),
                _ => false,
            };
        }
        // `#[test]`, `#[tokio::test]`, `#[rstest::test]`...
        path.segments.last().is_some_and(|s| s.ident == "test")
    })
}

/// True when the cfg predicate can only hold in test builds.
fn requires_test(meta: &Meta) -> bool {
    match meta {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) => {
            let Ok(inner) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            else {
                return false;
            };
            if list.path.is_ident("all") {
                inner.iter().any(requires_test)
            } else if list.path.is_ident("any") {
                !inner.is_empty() && inner.iter().all(requires_test)
            } else {
                // `not(..)` and anything unknown.
                false
            }
        }
        Meta::NameValue(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(src: &str) -> Vec<Attribute> {
        let item: syn::ItemFn = syn::parse_str(&format!("{src} fn f() {{}}")).unwrap();
        item.attrs
    }

    #[test]
    fn test_builds_only() {
        assert!(is_test_only(&attrs("#[cfg(test)]")));
        assert!(is_test_only(&attrs("#[cfg(all(test, feature = \"x\"))]")));
        assert!(is_test_only(&attrs("#[cfg(any(test, all(test, unix)))]")));
        assert!(is_test_only(&attrs("#[test]")));
        assert!(is_test_only(&attrs(
            "#[tokio::test(flavor = \"multi_thread\")]"
        )));
    }

    #[test]
    fn other_builds_too() {
        assert!(!is_test_only(&attrs("#[cfg(not(test))]")));
        assert!(!is_test_only(&attrs("#[cfg(any(test, feature = \"x\"))]")));
        assert!(!is_test_only(&attrs("#[cfg(feature = \"test\")]")));
        assert!(!is_test_only(&attrs("#[doc(hidden)] #[inline]")));
    }
}
