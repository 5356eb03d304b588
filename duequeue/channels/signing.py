"""Standard Webhooks secrets and signatures; light enough for settings validation."""

import base64
import binascii
import hmac

from duequeue.errors import ConfigError

_SECRET_PREFIX = "whsec_"
# Standard Webhooks: a secret of 24 to 64 random bytes; a shorter key is guessable.
MIN_KEY_BYTES = 24


def parse_secret(secret: str) -> bytes:
    """Return the HMAC key of a `whsec_<base64>` secret; raise ConfigError on a bad format."""
    if not secret.startswith(_SECRET_PREFIX):
        raise ConfigError("DUEQUEUE_WEBHOOK_SECRET: must start with 'whsec_' followed by base64")
    encoded = secret[len(_SECRET_PREFIX) :]
    # Accept unpadded base64 like the reference libraries do.
    encoded += "=" * (-len(encoded) % 4)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        # `from None`: the decoder's message could quote part of the secret.
        raise ConfigError(
            "DUEQUEUE_WEBHOOK_SECRET: the part after 'whsec_' is not base64"
        ) from None
    if not key:
        raise ConfigError("DUEQUEUE_WEBHOOK_SECRET: the key after 'whsec_' is empty")
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"DUEQUEUE_WEBHOOK_SECRET: the key is only {len(key)} bytes; Standard Webhooks "
            f"requires at least {MIN_KEY_BYTES} random bytes (the README shows a one-liner)"
        )
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the `webhook-signature` value (`v1,<base64>`) of one message."""
    return sign_with_key(parse_secret(secret), msg_id, timestamp, body)


def sign_with_key(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the `webhook-signature` value for an already decoded key."""
    # hmac.digest: OpenSSL's one-shot HMAC, without building an HMAC object per message.
    digest = hmac.digest(key, f"{msg_id}.{timestamp}.".encode() + body, "sha256")
    return "v1," + base64.b64encode(digest).decode("ascii")
