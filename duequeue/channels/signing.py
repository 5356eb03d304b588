"""Standard Webhooks secrets and signatures; light enough for settings validation."""

import base64
import binascii
import hashlib
import hmac

from duequeue.errors import ConfigError

_SECRET_PREFIX = "whsec_"
# Standard Webhooks: a secret of 24 to 64 random bytes; a shorter key is guessable.
MIN_KEY_BYTES = 24


def parse_secret(secret: str) -> bytes:
    """Return the HMAC key of a `whsec_<base64>` secret; raise ConfigError on a bad format.

    Taken: canonical standard base64 (RFC 4648: `+` and `/`, `=` padding, no stray bits), the
    one form every official Standard Webhooks library reads. A secret missing only its `=`
    padding is taken too and padded (`padding_missing` says how much): it names one key, and
    refusing it would stop every tick of a setup that worked. Anything else is refused rather
    than guessed at, because the libraries would disagree on its key: Python's drops `-` and
    `_`, Java's refuses them; Rust's refuses a last character with stray bits, Go's ignores them.
    """
    return base64.b64decode(_canonical(secret))


def padding_missing(secret: str) -> int:
    """Return how many `=` a valid secret lacks (0 when it is canonical)."""
    return len(_canonical(secret)) - len(secret.removeprefix(_SECRET_PREFIX))


def _canonical(secret: str) -> str:
    """Return the canonical padded base64 of a secret's key, or raise ConfigError."""
    if not secret.startswith(_SECRET_PREFIX):
        raise ConfigError("DUEQUEUE_WEBHOOK_SECRET: must start with 'whsec_' followed by base64")
    encoded = secret[len(_SECRET_PREFIX) :]
    if not encoded.isprintable() or " " in encoded:
        raise ConfigError(
            "DUEQUEUE_WEBHOOK_SECRET: the part after 'whsec_' holds spaces or line breaks"
        )
    if "-" in encoded or "_" in encoded:
        raise ConfigError(
            "DUEQUEUE_WEBHOOK_SECRET: the part after 'whsec_' is URL-safe base64 ('-' or '_'); "
            "Standard Webhooks secrets are standard base64 ('+' and '/')"
        )
    if "=" not in encoded:
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
    if base64.b64encode(key).decode("ascii") != encoded:
        raise ConfigError(
            "DUEQUEUE_WEBHOOK_SECRET: the part after 'whsec_' is not canonical base64 (its last "
            "character before the padding carries stray bits, or the padding is misplaced)"
        )
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"DUEQUEUE_WEBHOOK_SECRET: the key is only {len(key)} bytes; Standard Webhooks "
            f"requires at least {MIN_KEY_BYTES} random bytes "
            "(docs/email-and-webhooks.md shows a one-liner)"
        )
    return encoded


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the `webhook-signature` value (`v1,<base64>`) of one message."""
    return sign_with_key(parse_secret(secret), msg_id, timestamp, body)


def sign_with_key(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return the `webhook-signature` value for an already decoded key."""
    # hmac.digest: OpenSSL's one-shot HMAC, without building an HMAC object per message.
    digest = hmac.digest(key, f"{msg_id}.{timestamp}.".encode() + body, "sha256")
    return "v1," + base64.b64encode(digest).decode("ascii")


class Signer:
    """Sign message after message with one key.

    The key's HMAC state is prepared once and copied per message: hmac.digest sets the key up
    again on every call, which costs a third of a signature.
    """

    __slots__ = ("_keyed",)

    def __init__(self, key: bytes) -> None:
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)

    def sign(self, msg_id: str, timestamp: int, body: bytes) -> str:
        """Return the `webhook-signature` value of one message (as sign_with_key does)."""
        mac = self._keyed.copy()
        mac.update(f"{msg_id}.{timestamp}.".encode())
        mac.update(body)
        return "v1," + binascii.b2a_base64(mac.digest(), newline=False).decode("ascii")
