"""Mutual TLS with the host, as the Go SDK sets it up (sdk/plugin/tls.go).

A hearth host makes the keys: it writes the plugin's certificate, its key
and the host's certificate (three PEM blocks) into an inherited pipe whose
descriptor HEARTH_PLUGIN_TLS_FD names, never the environment, so the
agent's own child processes never see them. A plain go-plugin host (one
with AutoMTLS, such as sdktest's) instead puts its certificate in
PLUGIN_CLIENT_CERT and expects the plugin to make its own, sent back in the
handshake line: the plugin makes a P-256 self-signed certificate for
"localhost", as hearth does (go-plugin's own would be P-521, ~30x slower).
Without either, the plugin serves without TLS.
"""

from __future__ import annotations

import base64
import datetime
import os
import re
from dataclasses import dataclass
from typing import Optional

ENV_TLS_FD = "HEARTH_PLUGIN_TLS_FD"
ENV_CLIENT_CERT = "PLUGIN_CLIENT_CERT"

_PEM = re.compile(rb"-----BEGIN ([A-Z ]+)-----\r?\n.*?-----END \1-----\r?\n?", re.S)


@dataclass
class Material:
    """One plugin start's TLS material."""

    cert_pem: bytes
    """The plugin's certificate: it serves with it, and dials the host's callbacks with it."""
    key_pem: bytes
    peer_pem: bytes
    """The host's certificate, the only one trusted."""
    handshake_cert: str = ""
    """The sixth field of the handshake line: the plugin's certificate (DER,
    unpadded base64) when the plugin made it, "" when the host did."""


class TLSError(Exception):
    """The TLS material the host passed cannot be used."""


def split_pem(b: bytes) -> list[bytes]:
    """The PEM blocks in ``b``, in order."""
    return [m.group(0) for m in _PEM.finditer(b)]


def from_pipe(value: str) -> Material:
    """Reads the material from the descriptor named by HEARTH_PLUGIN_TLS_FD=value."""
    try:
        fd = int(value)
    except ValueError:
        raise TLSError(f"{ENV_TLS_FD}={value!r} is not a file descriptor") from None
    if fd < 3:
        raise TLSError(f"{ENV_TLS_FD}={value!r} is not a file descriptor")
    try:
        with os.fdopen(fd, "rb") as f:
            b = f.read()
    except OSError as e:
        raise TLSError(f"read TLS material from fd {fd}: {e}") from None
    blocks = split_pem(b)
    if len(blocks) != 3:
        raise TLSError(f"TLS material from fd {fd} holds {len(blocks)} PEM blocks, want 3")
    return Material(cert_pem=blocks[0], key_pem=blocks[1], peer_pem=blocks[2])


def self_signed() -> tuple[bytes, bytes, bytes]:
    """A P-256 certificate for "localhost" that is its own CA: (cert PEM, key PEM, cert DER)."""
    # Imported here: a plugin started by a hearth host never needs it, and
    # it costs tens of milliseconds of cold start.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "hearth"), x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(seconds=30))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=True,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return cert_pem, key_pem, cert.public_bytes(serialization.Encoding.DER)


def from_environment() -> Optional[Material]:
    """The material for this start, from the pipe or by go-plugin's AutoMTLS; None for none."""
    v = os.environ.pop(ENV_TLS_FD, "")
    if v:
        return from_pipe(v)
    client = os.environ.get(ENV_CLIENT_CERT, "")
    if client:
        if not split_pem(client.encode()):
            raise TLSError(f"{ENV_CLIENT_CERT} holds no PEM certificate")
        cert_pem, key_pem, der = self_signed()
        return Material(
            cert_pem=cert_pem,
            key_pem=key_pem,
            peer_pem=client.encode(),
            handshake_cert=base64.b64encode(der).decode().rstrip("="),
        )
    return None
