//! TLS for tests: a certificate authority generated per test, the certificates it issues, and
//! a blocking HTTPS client that trusts it (and presents a client certificate, or not).

use std::{
    io::{self, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};

use crate::HttpResponse;

/// A certificate authority that lives for one test.
#[derive(Debug)]
pub struct TestCa {
    /// Its certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate a [`TestCa`] issued, and its key.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key, PKCS#8 PEM.
    pub key_pem: String,
}

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::new()).expect("CA params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let pem = params.self_signed(&key).expect("CA certificate").pem();
        TestCa {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `localhost` and 127.0.0.1.
    pub fn server(&self) -> Issued {
        self.issue(
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate named `name`.
    pub fn client(&self, name: &str) -> Issued {
        self.issue(vec![name.into()], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, names: Vec<String>, usage: ExtendedKeyUsagePurpose) -> Issued {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(names).expect("params");
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.issuer).expect("certificate");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

impl Issued {
    /// Writes `<name>.crt` and `<name>.key` into `dir`, each renamed into place (what a
    /// certificate manager does), and returns their paths.
    pub fn write(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let cert = dir.join(format!("{name}.crt"));
        let key = dir.join(format!("{name}.key"));
        write_replacing(&cert, self.cert_pem.as_bytes());
        write_replacing(&key, self.key_pem.as_bytes());
        (cert, key)
    }
}

/// Writes `bytes` beside `path` and renames the file into place.
pub fn write_replacing(path: &Path, bytes: &[u8]) {
    let aside = path.with_extension("new");
    std::fs::write(&aside, bytes).expect("writing aside");
    std::fs::rename(&aside, path).expect("renaming into place");
}

/// An HTTPS client trusting one [`TestCa`].
#[derive(Debug, Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
}

impl TlsClient {
    /// Trusts `ca` only; presents `identity` when the server asks for a client certificate.
    pub fn new(ca: &TestCa, identity: Option<&Issued>) -> TlsClient {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).expect("CA PEM"))
            .expect("CA certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots);
        let config = match identity {
            Some(identity) => {
                let chain = vec![
                    CertificateDer::from_pem_slice(identity.cert_pem.as_bytes()).expect("PEM"),
                ];
                let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).expect("key");
                builder
                    .with_client_auth_cert(chain, key)
                    .expect("client certificate")
            }
            None => builder.with_no_client_auth(),
        };
        TlsClient {
            config: Arc::new(config),
        }
    }

    /// A connection to `addr`, as `localhost`; the handshake runs with the first request.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<TlsConnection> {
        let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
        let name = ServerName::try_from("localhost").expect("server name");
        let connection = ClientConnection::new(Arc::clone(&self.config), name)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(TlsConnection {
            stream: StreamOwned::new(connection, tcp),
        })
    }

    /// One `GET path` on a new connection; an error when the handshake fails.
    pub fn get(
        &self,
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
    ) -> io::Result<HttpResponse> {
        self.connect(addr)?.request("GET", path, headers)
    }
}

/// A kept-alive HTTPS connection.
#[derive(Debug)]
pub struct TlsConnection {
    stream: StreamOwned<ClientConnection, TcpStream>,
}

impl TlsConnection {
    /// A body-less request; the response is read by its `Content-Length`, so the connection
    /// stays open for the next one.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> io::Result<HttpResponse> {
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        self.stream.write_all(request.as_bytes())?;
        self.stream.flush()?;
        let mut received = Vec::new();
        let mut buffer = [0; 16 * 1024];
        loop {
            if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = crate::parse_response(&received[..end + 4]);
                let length: usize = head
                    .header("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if received.len() >= end + 4 + length {
                    return Ok(crate::parse_response(&received[..end + 4 + length]));
                }
            }
            let n = self.stream.read(&mut buffer)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed before a whole response",
                ));
            }
            received.extend_from_slice(&buffer[..n]);
        }
    }
}
