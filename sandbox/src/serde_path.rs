//! Paths in serialised sensor data, losslessly: a UTF-8 path is a JSON string, any other a
//! `{"hex": "…"}` object of its bytes. A server cannot make a change unrecordable by naming
//! a file with bytes that are not UTF-8. Use with `#[serde(with = "…")]`.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Spelled {
    Text(String),
    Bytes { hex: String },
}

fn spell(path: &Path) -> Spelled {
    match path.to_str() {
        Some(text) => Spelled::Text(text.to_owned()),
        None => Spelled::Bytes {
            hex: hex::encode(path.as_os_str().as_bytes()),
        },
    }
}

fn read<E: serde::de::Error>(spelled: Spelled) -> Result<PathBuf, E> {
    match spelled {
        Spelled::Text(text) => Ok(PathBuf::from(text)),
        Spelled::Bytes { hex } => hex::decode(&hex)
            .map(|bytes| PathBuf::from(OsString::from_vec(bytes)))
            .map_err(|e| E::custom(format!("path bytes {hex:?}: {e}"))),
    }
}

/// A `PathBuf` field.
pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    spell(path).serialize(serializer)
}

/// A `PathBuf` field.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
    read(Spelled::deserialize(deserializer)?)
}

/// An `Option<PathBuf>` field.
pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(
        path: &Option<PathBuf>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        path.as_deref().map(spell).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<PathBuf>, D::Error> {
        Option::<Spelled>::deserialize(deserializer)?
            .map(read)
            .transpose()
    }
}

/// A `Vec<PathBuf>` field.
pub mod vec {
    use super::*;

    pub fn serialize<S: Serializer>(paths: &[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(paths.iter().map(|p| spell(p)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<PathBuf>, D::Error> {
        Vec::<Spelled>::deserialize(deserializer)?
            .into_iter()
            .map(read)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(with = "super")]
        path: PathBuf,
        #[serde(with = "super::option")]
        maybe: Option<PathBuf>,
    }

    #[test]
    fn utf8_paths_are_strings_and_other_bytes_round_trip_as_hex() {
        let odd = PathBuf::from(OsString::from_vec(b"/lab/work/\xff\xfe.txt".to_vec()));
        let holder = Holder {
            path: odd.clone(),
            maybe: Some(PathBuf::from("/lab/plain")),
        };
        let json = serde_json::to_string(&holder).unwrap();
        assert_eq!(
            json,
            r#"{"path":{"hex":"2f6c61622f776f726b2fff fe2e747874"},"maybe":"/lab/plain"}"#
                .replace(' ', "")
        );
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), holder);
        let none = Holder {
            path: PathBuf::from("/a"),
            maybe: None,
        };
        let json = serde_json::to_string(&none).unwrap();
        assert_eq!(json, r#"{"path":"/a","maybe":null}"#);
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), none);
    }
}
