//! File names as text without losing bytes. Unix file names are bytes; cudoctor carries machine
//! paths as `String`s (in snapshots, findings, commands). A byte that is not valid UTF-8 is kept
//! as one character of the last 128 code points of Unicode's private-use plane 16 (U+10FF80 +
//! byte - 0x80), so the path maps back to the real file exactly: no false "cannot be read" for
//! a file that exists, no `?` that names another file. A name that really holds one of those
//! code points has its four UTF-8 bytes kept as four stand-ins, so the mapping stays one to one.
//! Displays show a stand-in as `\xHH` ([`crate::inert`]); printed commands name it as `$'\xHH'`.
//! Saved snapshots (JSON) carry the stand-ins as they are, so a snapshot loads back to the same
//! bytes.

use std::borrow::Cow;
use std::ffi::OsStr;

const BASE: u32 = 0x10_ff00;
/// The first stand-in (the one of byte 0x80); every code point from it to U+10FFFF is one.
const FIRST: u32 = BASE + 0x80;

/// The character that stands for the byte `b` (0x80..=0xff).
fn stand_in(b: u8) -> char {
    char::from_u32(BASE + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The byte a stand-in character keeps, if `c` is one.
pub fn kept_byte(c: char) -> Option<u8> {
    let v = u32::from(c);
    (v >= FIRST).then(|| (v - BASE) as u8)
}

/// Raw bytes (a file name, an ELF string, a tool's output) as text: valid UTF-8 as it is, each
/// other byte as its stand-in.
pub fn from_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        if !text.chars().any(|c| kept_byte(c).is_some()) {
            return Cow::Borrowed(text);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if kept_byte(c).is_some() {
                let mut buf = [0u8; 4];
                out.extend(c.encode_utf8(&mut buf).bytes().map(stand_in));
            } else {
                out.push(c);
            }
        }
        out.extend(chunk.invalid().iter().map(|&b| stand_in(b)));
    }
    Cow::Owned(out)
}

/// The bytes text made by [`from_bytes`] stands for (text without stand-ins: its UTF-8).
pub fn to_bytes(s: &str) -> Cow<'_, [u8]> {
    if !s.chars().any(|c| kept_byte(c).is_some()) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut bytes = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match kept_byte(c) {
            Some(b) => bytes.push(b),
            None => bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    Cow::Owned(bytes)
}

/// A name or path of this machine as text ([`from_bytes`] of its bytes).
#[cfg(unix)]
pub fn from_os(s: &OsStr) -> Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    from_bytes(s.as_bytes())
}

/// A name or path of this machine as text (elsewhere than Unix names are not bytes: lossy).
#[cfg(not(unix))]
pub fn from_os(s: &OsStr) -> Cow<'_, str> {
    s.to_string_lossy()
}

/// The real name of text made by [`from_os`].
#[cfg(unix)]
pub fn to_os(s: &str) -> Cow<'_, OsStr> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    match to_bytes(s) {
        Cow::Borrowed(b) => Cow::Borrowed(OsStr::from_bytes(b)),
        Cow::Owned(b) => Cow::Owned(std::ffi::OsString::from_vec(b)),
    }
}

/// The real name of text made by [`from_os`].
#[cfg(not(unix))]
pub fn to_os(s: &str) -> Cow<'_, OsStr> {
    Cow::Borrowed(OsStr::new(s))
}

/// A path of this machine as text (see [`from_os`]).
pub fn from_path(p: &std::path::Path) -> Cow<'_, str> {
    from_os(p.as_os_str())
}

/// The real path of text made by [`from_path`].
pub fn to_path(s: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(to_os(s).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_utf8_survive_the_round_trip() {
        for raw in [
            &b"libtorch_cuda.so"[..],
            b"lib\xff\xfe.so",
            b"caf\xc3\xa9\xe9",
            b"\x80",
            b"\xf0\x9f\x98",
            // A real U+10FFFF and U+10FF80 (valid UTF-8 that looks like stand-ins).
            b"a\xf4\x8f\xbf\xbfb\xf4\x8f\xbe\x80",
            b"",
        ] {
            let text = from_bytes(raw);
            assert_eq!(&*to_bytes(&text), raw, "{text:?}");
            #[cfg(unix)]
            {
                use std::os::unix::ffi::OsStrExt;
                assert_eq!(to_os(&from_os(OsStr::from_bytes(raw))).as_bytes(), raw);
            }
        }
        assert!(matches!(from_bytes(b"plain"), Cow::Borrowed("plain")));
        assert_eq!(
            kept_byte(from_bytes(b"\xff").chars().next().unwrap()),
            Some(0xff)
        );
    }

    #[test]
    fn different_bytes_never_become_the_same_text() {
        // The lossy conversion maps all three to "lib\u{fffd}.so"; these stay apart.
        let names: [&[u8]; 4] = [
            b"lib\xff.so",
            b"lib\xfe.so",
            b"lib\xef\xbf\xbd.so",
            b"lib\xf4\x8f\xbf\xbf.so",
        ];
        let texts: std::collections::BTreeSet<String> =
            names.iter().map(|n| from_bytes(n).into_owned()).collect();
        assert_eq!(texts.len(), names.len(), "{texts:?}");
    }
}
