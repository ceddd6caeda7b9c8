//! The serving certificate and the TLS listener of the secure port.
//!
//! Like kube-controller-manager, the certificate comes from `--tls-cert-file` and
//! `--tls-private-key-file`, or, without them, is generated at start: a throw-away CA and a
//! serving certificate it signs, for `localhost`, `127.0.0.1` and the host name. Upstream
//! writes the generated pair to `--cert-dir` and reuses it on the next start; so do we when
//! `--cert-dir` is given, and otherwise keep it in memory only (the root filesystem of the
//! Deployment is read-only). TLS runs on rustls with the `ring` provider, the one kube's
//! client already brings.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

/// The file names upstream gives the generated pair in `--cert-dir`, with our name.
const PAIR_NAME: &str = "kube-endpoints";
/// How long a generated certificate is valid (upstream: one year).
const GENERATED_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long a client may take to finish the TLS handshake before it is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// `--tls-cert-file` (PEM, the serving certificate then any intermediates) and
    /// `--tls-private-key-file` (PEM).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// Generated at start; written to (and read back from) `cert_dir` when given.
    SelfSigned {
        /// `--cert-dir`.
        cert_dir: Option<PathBuf>,
    },
}

impl Default for CertSource {
    fn default() -> Self {
        Self::SelfSigned { cert_dir: None }
    }
}

/// Why no serving certificate could be had.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or holds no usable PEM.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The certificate or key, already read, holds no usable PEM.
    #[error("the serving {what} holds no usable PEM")]
    Pem {
        /// `certificate` or `private key`.
        what: &'static str,
        /// What went wrong.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The generated pair could not be written to `--cert-dir`.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// Generating the self-signed certificate failed.
    #[error("cannot generate a self-signed certificate")]
    Generate(#[source] rcgen::Error),
    /// rustls refused the certificate and key (for instance, a key that does not match).
    #[error("the serving certificate and key are not usable")]
    Config(#[source] rustls::Error),
}

/// A certificate chain and its key, in PEM.
#[derive(Debug, Clone)]
pub struct ServingCert {
    /// The serving certificate, then its issuers.
    pub chain_pem: String,
    /// The private key.
    pub key_pem: String,
    /// For a generated certificate, the CA that signed it: what a client must trust.
    pub ca_pem: Option<String>,
}

impl ServingCert {
    /// Loads or generates the certificate as `source` says.
    pub fn load(source: &CertSource) -> Result<Self, TlsError> {
        match source {
            CertSource::Files { cert, key } => Ok(Self {
                chain_pem: read_pem(cert)?,
                key_pem: read_pem(key)?,
                ca_pem: None,
            }),
            CertSource::SelfSigned { cert_dir: None } => Self::generate(),
            CertSource::SelfSigned {
                cert_dir: Some(dir),
            } => {
                let (cert, key) = pair_paths(dir);
                // Upstream reuses a pair it wrote before, so restarts keep the certificate
                // a scraper may have pinned.
                if cert.is_file() && key.is_file() {
                    return Self::load(&CertSource::Files { cert, key });
                }
                let generated = Self::generate()?;
                write(dir, &cert, &generated.chain_pem)?;
                write(dir, &key, &generated.key_pem)?;
                Ok(generated)
            }
        }
    }

    /// A fresh CA and a serving certificate it signs, for `localhost`, the loopback
    /// addresses and this host's name, valid for a year from now.
    pub fn generate() -> Result<Self, TlsError> {
        let host = hostname::get()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_owned());
        let now = time::OffsetDateTime::now_utc();
        let stamp = now.unix_timestamp();
        let valid = |params: &mut CertificateParams| {
            // An hour of slack for clocks behind ours, as upstream allows.
            params.not_before = now - time::Duration::hours(1);
            params.not_after = now + GENERATED_VALIDITY;
        };

        let ca_key = KeyPair::generate().map_err(TlsError::Generate)?;
        let mut ca = CertificateParams::default();
        valid(&mut ca);
        ca.distinguished_name
            .push(DnType::CommonName, format!("{host}-ca@{stamp}"));
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca.self_signed(&ca_key).map_err(TlsError::Generate)?;
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate().map_err(TlsError::Generate)?;
        let mut leaf = CertificateParams::default();
        valid(&mut leaf);
        leaf.distinguished_name
            .push(DnType::CommonName, format!("{host}@{stamp}"));
        leaf.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let mut names = vec!["localhost".to_owned()];
        if host != "localhost" {
            names.push(host);
        }
        for name in names {
            let dns = name.try_into().map_err(TlsError::Generate)?;
            leaf.subject_alt_names.push(SanType::DnsName(dns));
        }
        for ip in [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ] {
            leaf.subject_alt_names.push(SanType::IpAddress(ip));
        }
        let leaf_cert = leaf.signed_by(&key, &issuer).map_err(TlsError::Generate)?;
        Ok(Self {
            chain_pem: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
            key_pem: key.serialize_pem(),
            ca_pem: Some(ca_cert.pem()),
        })
    }

    /// The rustls configuration serving this certificate over HTTP/1.1.
    pub fn server_config(&self) -> Result<ServerConfig, TlsError> {
        let chain = CertificateDer::pem_slice_iter(self.chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| TlsError::Pem {
                what: "certificate",
                source,
            })?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).map_err(|source| {
            TlsError::Pem {
                what: "private key",
                source,
            }
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(TlsError::Config)?;
        // axum's server speaks HTTP/1.1 only here; offering h2 would break clients that
        // pick it.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

fn pair_paths(dir: &Path) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{PAIR_NAME}.crt")),
        dir.join(format!("{PAIR_NAME}.key")),
    )
}

/// Reads a PEM file, checking that it holds at least one PEM section.
fn read_pem(path: &Path) -> Result<String, TlsError> {
    let read_error = |source| TlsError::Read {
        path: path.to_owned(),
        source,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| read_error(rustls_pki_types::pem::Error::Io(e)))?;
    if !text.contains("-----BEGIN ") {
        return Err(read_error(rustls_pki_types::pem::Error::NoItemsFound));
    }
    Ok(text)
}

fn write(dir: &Path, path: &Path, text: &str) -> Result<(), TlsError> {
    let error = |source| TlsError::Write {
        path: path.to_owned(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(error)?;
    std::fs::write(path, text).map_err(error)
}

/// A TCP listener that hands out connections once their TLS handshake is done.
///
/// Handshakes run in their own tasks, so a client that connects and stalls does not hold up
/// the others; one that does not finish within ten seconds is dropped. Dropping the listener
/// stops accepting.
pub struct TlsListener {
    local_addr: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    acceptor: JoinHandle<()>,
}

impl TlsListener {
    /// Wraps a bound listener.
    pub fn new(listener: TcpListener, config: ServerConfig) -> std::io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let tls = TlsAcceptor::from(Arc::new(config));
        let (done, ready) = mpsc::channel(64);
        let acceptor = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        debug!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (tls, done) = (tls.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            // The listener is gone only when serving stopped.
                            let _serving_stopped = done.send((stream, peer)).await;
                        }
                        Ok(Err(error)) => debug!(%peer, %error, "TLS handshake failed"),
                        Err(_) => debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self {
            local_addr,
            ready,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The acceptor task holds a sender for as long as it runs, and it runs until
            // this listener is dropped; never hand out a connection after that.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_is_usable_and_written_to_the_cert_dir_once() {
        let dir = tempfile::tempdir().unwrap();
        let source = CertSource::SelfSigned {
            cert_dir: Some(dir.path().join("certs")),
        };
        let first = ServingCert::load(&source).unwrap();
        first.server_config().unwrap();
        let written = std::fs::read_to_string(dir.path().join("certs/kube-endpoints.crt")).unwrap();
        assert_eq!(written, first.chain_pem);
        let second = ServingCert::load(&source).unwrap();
        assert_eq!(second.chain_pem, first.chain_pem, "the pair is reused");
        assert_eq!(second.key_pem, first.key_pem);
    }

    #[test]
    fn a_missing_or_empty_certificate_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.crt");
        std::fs::write(&empty, "not a certificate").unwrap();
        for cert in [dir.path().join("missing.crt"), empty] {
            let error = ServingCert::load(&CertSource::Files {
                cert: cert.clone(),
                key: cert.clone(),
            })
            .unwrap_err();
            assert!(
                error.to_string().contains(&cert.display().to_string()),
                "{error}"
            );
        }
    }

    #[test]
    fn a_key_that_does_not_match_the_certificate_is_refused() {
        let one = ServingCert::generate().unwrap();
        let other = ServingCert::generate().unwrap();
        let mixed = ServingCert {
            key_pem: other.key_pem,
            ..one
        };
        assert!(matches!(mixed.server_config(), Err(TlsError::Config(_))));
    }
}
