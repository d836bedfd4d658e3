"""The self-signed certificate of the local AMS endpoint (argo-ams-library only speaks https).

Generated once, on the first ``make run``, for 127.0.0.1 and localhost, and kept for the next runs, so a
client's ``verify=`` can keep pointing at the same file.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CERT_FILE = "ams-local-cert.pem"
KEY_FILE = "ams-local-key.pem"
VALID_DAYS = 3650


def ensure_certificate(directory: Path) -> tuple[Path, Path]:
    """The (certificate, private key) paths in ``directory``, made now if either is missing."""
    cert_path, key_path = directory / CERT_FILE, directory / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    key_path.touch(mode=0o600)
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(_self_signed(key).public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def _self_signed(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Metro local AMS endpoint")])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(names, critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
