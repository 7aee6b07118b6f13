//! Certificates for the test control plane: one CA that signs the API server's serving
//! certificate (SAN `IP:127.0.0.1`, `DNS:localhost`), client certificates (the admin is in
//! `system:masters`), webhook serving certificates, and the service-account signing key pair.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// A PEM certificate and its PEM (PKCS#8) private key.
#[derive(Clone, Debug)]
pub struct CertAndKey {
    /// PEM certificate.
    pub cert_pem: String,
    /// PEM private key.
    pub key_pem: String,
}

/// The test CA.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    /// PEM of the CA certificate (what goes into `caBundle` and kubeconfigs).
    pub cert_pem: String,
}

impl TestCa {
    /// A new CA.
    pub fn new() -> Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "airunway-e2e-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(TestCa {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// A serving certificate for 127.0.0.1 and localhost.
    pub fn serving_cert(&self, common_name: &str) -> Result<CertAndKey> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A certificate for both ends of a mutual TLS connection (server and client
    /// authentication) with SANs `localhost`, `dns_names`, 127.0.0.1 and `ips`: a host process
    /// reached through a Service name and an address (KEDA's metrics server and operator).
    pub fn peer_cert(
        &self,
        common_name: &str,
        dns_names: &[&str],
        ips: &[IpAddr],
    ) -> Result<CertAndKey> {
        let key = KeyPair::generate()?;
        let mut names = vec!["localhost".to_string()];
        names.extend(dns_names.iter().map(|n| n.to_string()));
        let mut params = CertificateParams::new(names)?;
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        for ip in ips {
            params.subject_alt_names.push(SanType::IpAddress(*ip));
        }
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A client certificate for user `user` in `groups`.
    pub fn client_cert(&self, user: &str, groups: &[&str]) -> Result<CertAndKey> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// Writes the service-account signing key pair (PKCS#8 private, SPKI public) into `dir`.
pub fn write_service_account_keys(dir: &Path) -> Result<()> {
    let key = KeyPair::generate()?;
    std::fs::write(dir.join("sa.key"), key.serialize_pem()).context("writing sa.key")?;
    std::fs::write(dir.join("sa.pub"), key.public_key_pem()).context("writing sa.pub")?;
    Ok(())
}
