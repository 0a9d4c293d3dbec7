//! Content-addressed blobs: `blobs/<first two hex digits>/<64 hex digits>` beside the log.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::payload::BlobRef;

/// Why a blob could not be stored or does not match its reference.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob {path}: i/o error")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("blob {blake3} is missing (expected at {path})")]
    Missing { blake3: Digest, path: PathBuf },
    #[error("blob {path} is {found} bytes, its reference says {expected}")]
    Length {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("blob {path} hashes to {found}, not to its name")]
    Modified { path: PathBuf, found: Digest },
}

/// The blob directory of one receipt directory.
#[derive(Clone, Debug)]
pub struct BlobStore {
    root: PathBuf,
}

impl BlobStore {
    /// The store under `<receipt dir>/blobs`.
    pub fn new(receipt_dir: &Path) -> BlobStore {
        BlobStore {
            root: receipt_dir.join("blobs"),
        }
    }

    /// Where the blob named `blake3` lives.
    pub fn path(&self, blake3: &Digest) -> PathBuf {
        let name = blake3.to_hex();
        self.root.join(&name[..2]).join(name)
    }

    /// Where the blob named `blake3` lives once packed: its bytes, zstd-compressed.
    pub fn packed_path(&self, blake3: &Digest) -> PathBuf {
        let mut path = self.path(blake3).into_os_string();
        path.push(".zst");
        PathBuf::from(path)
    }

    /// Reads a blob, plain or packed, checking its length and hash against the reference.
    pub fn read(&self, blob: &BlobRef) -> Result<Vec<u8>, BlobError> {
        let path = self.path(&blob.blake3);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let packed = self.packed_path(&blob.blake3);
                match fs::File::open(&packed) {
                    // At most the referenced length plus one byte is decoded, so a damaged
                    // or hostile packed blob cannot make the reader allocate more.
                    Ok(file) => read_packed(file, blob.len, &packed)?,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(BlobError::Missing {
                            blake3: blob.blake3,
                            path,
                        });
                    }
                    Err(source) => {
                        return Err(BlobError::Io {
                            path: packed,
                            source,
                        });
                    }
                }
            }
            Err(source) => return Err(BlobError::Io { path, source }),
        };
        if bytes.len() as u64 != blob.len {
            return Err(BlobError::Length {
                path,
                expected: blob.len,
                found: bytes.len() as u64,
            });
        }
        let found = Digest::of(&bytes);
        if found != blob.blake3 {
            return Err(BlobError::Modified { path, found });
        }
        Ok(bytes)
    }

    /// Stores `bytes`, returning their reference and, when a new file was written,
    /// its path so the writer can fsync it at the next boundary.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<(BlobRef, Option<PathBuf>), BlobError> {
        let blob = BlobRef {
            blake3: Digest::of(bytes),
            len: bytes.len() as u64,
        };
        let path = self.path(&blob.blake3);
        if fs::metadata(&path).is_ok_and(|m| m.len() == blob.len) {
            return Ok((blob, None));
        }
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BlobError::Io { path, source }
        };
        let dir = path.parent().unwrap_or(&self.root);
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        // Write beside, then rename: a crash leaves a whole blob or none under its name.
        let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), blob.blake3));
        File::create(&tmp)
            .and_then(|mut file| file.write_all(bytes))
            .map_err(io_err(&tmp))?;
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        Ok((blob, Some(path)))
    }
}

/// The bytes of a packed blob, decoding at most `len + 1` of them.
fn read_packed(file: fs::File, len: u64, path: &Path) -> Result<Vec<u8>, BlobError> {
    use std::io::Read;
    let io_err = |source| BlobError::Io {
        path: path.to_path_buf(),
        source,
    };
    let decoder = zstd::stream::read::Decoder::new(file).map_err(io_err)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).min(16 << 20));
    decoder
        .take(len.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_then_read_checks_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::new(dir.path());
        let (blob, written) = store.put(b"large payload").expect("put");
        assert!(written.is_some());
        assert_eq!(store.read(&blob).expect("read"), b"large payload");
        let (again, rewritten) = store.put(b"large payload").expect("put again");
        assert_eq!((again, rewritten), (blob.clone(), None));

        fs::write(store.path(&blob.blake3), b"large paylOad").expect("tamper");
        assert!(matches!(store.read(&blob), Err(BlobError::Modified { .. })));
        fs::remove_file(store.path(&blob.blake3)).expect("remove");
        assert!(matches!(store.read(&blob), Err(BlobError::Missing { .. })));
    }
}
