"""TLS: `ssl_context` turns `SecuritySettings` into an `ssl.SSLContext`."""

from __future__ import annotations

import ssl

from .redaction import redact
from .settings import SecurityConfigError, SecuritySettings


# --------------------------------------------------------------------------- TLS


def ssl_context(settings: SecuritySettings) -> ssl.SSLContext | None:
    """A client TLS context for ``settings``, or None when the protocol has no TLS.

    The server certificate chain is always verified (``CERT_REQUIRED``), against
    ``ssl_cafile`` or else the system trust store; ``ssl_check_hostname=False``
    only skips the hostname match. A client certificate is loaded when given,
    decrypting its key with ``ssl_key_password`` (never prompting on a tty).
    """
    if not settings.uses_tls:
        return None
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=settings.ssl_cafile)
    except (OSError, ssl.SSLError) as exc:
        raise SecurityConfigError(
            redact(f"cannot load CA bundle {settings.ssl_cafile}: {_os_reason(exc)}", settings)
        ) from None
    context.check_hostname = settings.ssl_check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if settings.ssl_certfile is not None:
        _load_client_certificate(context, settings)
    return context


def _load_client_certificate(context: ssl.SSLContext, settings: SecuritySettings) -> None:
    password = settings.ssl_key_password

    def give_password() -> str:
        # A callable stops OpenSSL from prompting interactively for an encrypted key.
        return password.reveal() if password is not None else ""

    where = settings.ssl_certfile
    if settings.ssl_keyfile is not None:
        where = f"{where} / key {settings.ssl_keyfile}"
    try:
        context.load_cert_chain(settings.ssl_certfile or "", settings.ssl_keyfile, give_password)
    except (OSError, ssl.SSLError) as exc:
        hint = (
            " (check the key password and that both files are PEM)"
            if password is not None
            else " (if the key is encrypted, set the key password)"
        )
        raise SecurityConfigError(
            redact(f"cannot load client certificate {where}: {_os_reason(exc)}{hint}", settings)
        ) from None


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
