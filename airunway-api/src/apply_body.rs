//! Server-side apply bodies the API server can always read.
//!
//! An apply request is sent as `application/apply-patch+yaml`, and the API server reads it
//! with a YAML parser, which refuses a few characters anywhere in the stream, even inside a
//! quoted string: U+007F–U+0084, U+0086–U+009F, U+FFFE and U+FFFF ("yaml: control characters
//! are not allowed"). JSON allows them unescaped and `serde_json` writes them as they are, so a
//! ModelDeployment whose env value or argument holds one (the API server stores it: the
//! ModelDeployment itself was sent as JSON) would make every apply that carries it fail with
//! `400 BadRequest`. Others it reads but changes: U+0085, U+2028 and U+2029 are line breaks
//! to YAML 1.1, folded into a space inside a quoted string. [`apply`] writes all of these as
//! `\uXXXX` escapes instead, which both JSON and YAML read back as the same character: the
//! value arrives unchanged.

use std::io;

use kube::core::params::Patch;
use serde::{Serialize, Serializer};
use serde_json::ser::Formatter;

/// A server-side apply patch of `body`, serialized so the API server's YAML reader accepts it
/// (see the module documentation). Use it for every `Patch::Apply`.
pub fn apply<T: Serialize>(body: &T) -> Patch<YamlReadable<'_, T>> {
    Patch::Apply(YamlReadable(body))
}

/// A value serialized as JSON with the characters a YAML reader refuses or changes written as
/// `\uXXXX` escapes.
#[derive(Debug)]
pub struct YamlReadable<'a, T>(pub &'a T);

impl<T: Serialize> Serialize for YamlReadable<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let text = to_yaml_readable_json(self.0).map_err(S::Error::custom)?;
        let raw = serde_json::value::RawValue::from_string(text).map_err(S::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// `value` as compact JSON, with every character a YAML reader refuses or changes escaped.
pub fn to_yaml_readable_json<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, YamlReadableFormatter);
    value.serialize(&mut serializer)?;
    // serde_json writes UTF-8 only, and the escapes are ASCII.
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

/// Whether a YAML reader (the API server's) refuses `c` in its input: everything
/// outside tab, LF, CR, U+0020–U+007E, U+0085, U+00A0–U+D7FF, U+E000–U+FFFD and
/// U+10000–U+10FFFF. serde_json already escapes U+0000–U+001F.
pub fn yaml_refuses(c: char) -> bool {
    !matches!(c,
        '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}'
            | '\u{e000}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}')
}

/// Whether `c` must be escaped for a YAML reader to return it unchanged: it refuses it
/// ([`yaml_refuses`]) or reads it as a line break (U+0085, U+2028, U+2029).
pub fn yaml_needs_escape(c: char) -> bool {
    yaml_refuses(c) || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// serde_json's compact output (the trait's default methods), with string fragments escaped
/// as [`yaml_needs_escape`] requires.
struct YamlReadableFormatter;

impl Formatter for YamlReadableFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if yaml_needs_escape(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                // Every such character is in the Basic Multilingual Plane: one escape.
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refused_characters_are_escaped_and_read_back_unchanged() {
        let value = json!({"env": [{"name": "A", "value": "tab\there\u{0}nul\u{7f}del\u{80}\u{84}\u{85}\u{86}\u{9f}\u{2028}\u{2029}\u{feff}\u{fffe}\u{ffff}模型🚀"}],
            "key\u{7f}": "x"});
        let text = to_yaml_readable_json(&value).unwrap();
        assert!(!text.chars().any(yaml_needs_escape), "{text:?}");
        assert!(text.contains(r"\u007f") && text.contains(r"\u0080") && text.contains(r"\u009f"));
        assert!(
            text.contains(r"\ufffe") && text.contains(r"\uffff") && text.contains(r"key\u007f")
        );
        assert!(text.contains(r"\u0085") && text.contains(r"\u2028") && text.contains(r"\u2029"));
        // Everything else YAML reads unchanged stays as it is; serde_json's own escapes stay.
        assert!(text.contains('\u{feff}') && text.contains("模型🚀") && text.contains(r"\t"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }

    #[test]
    fn every_character_round_trips_and_none_needing_escape_is_left() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            let value = serde_json::Value::String(format!("a{c}b"));
            let text = to_yaml_readable_json(&value).unwrap();
            assert!(!text.chars().any(yaml_needs_escape), "{c:?}: {text:?}");
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&text).unwrap(),
                value
            );
        }
    }

    #[test]
    fn plain_values_serialize_as_serde_json_does() {
        let value = json!({"a": [1, 2.5, null, true], "b": {"c": "d\"e\\f"}});
        assert_eq!(
            to_yaml_readable_json(&value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    #[test]
    fn the_patch_body_is_the_escaped_text() {
        let value = json!({"v": "a\u{7f}b"});
        let Patch::Apply(body) = apply(&value) else {
            panic!("not an apply patch")
        };
        assert_eq!(serde_json::to_string(&body).unwrap(), r#"{"v":"a\u007fb"}"#);
    }

    #[test]
    fn refused_set_matches_the_yaml_reader() {
        for c in [
            '\u{7f}', '\u{80}', '\u{84}', '\u{86}', '\u{9f}', '\u{fffe}', '\u{ffff}', '\u{1}',
        ] {
            assert!(yaml_refuses(c), "{c:?}");
        }
        for c in [
            '\t',
            '\n',
            '\r',
            ' ',
            '~',
            '\u{85}',
            '\u{a0}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fffd}',
            '\u{feff}',
            '\u{10000}',
            '\u{10ffff}',
        ] {
            assert!(!yaml_refuses(c), "{c:?}");
        }
    }
}
