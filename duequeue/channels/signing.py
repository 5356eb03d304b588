"""Standard Webhooks secrets and signatures; light enough for settings validation."""

import base64
import binascii
import hashlib
import hmac

from duequeue.errors import ConfigError

_SECRET_PREFIX = "whsec_"
# Standard Webhooks: a secret of 24 to 64 random bytes; a shorter key is guessable.
MIN_KEY_BYTES = 24
# Secrets one target signs with at once: an old and a new one while receivers rotate, with room.
MAX_SECRETS = 4
SETTING = "DUEQUEUE_WEBHOOK_SECRET"


def parse_secrets(text: str, name: str = SETTING) -> tuple[bytes, ...]:
    """Return the HMAC keys of space-separated secrets (rotation); raise ConfigError.

    Every message is signed with each key, all in one `webhook-signature` header (Standard
    Webhooks: "v1,sig1 v1,sig2"): a receiver holding any one of the secrets verifies it, so
    receivers move to a new secret one by one, and the old one is dropped after the last.
    """
    # Split on spaces only: a line break or tab in a secret is a copy-paste accident to report.
    secrets = [s for s in text.split(" ") if s]
    if not secrets:
        raise ConfigError(f"{name}: empty; give whsec_ followed by base64")
    if len(secrets) > 1 and not all(s.startswith(_SECRET_PREFIX) for s in secrets):
        raise ConfigError(
            f"{name}: the part after 'whsec_' holds spaces or line breaks (several secrets, "
            "for rotation, are separated by spaces, each starting with whsec_)"
        )
    if len(secrets) > MAX_SECRETS:
        raise ConfigError(f"{name}: {len(secrets)} secrets; at most {MAX_SECRETS} sign at once")
    keys = tuple(parse_secret(secret, name) for secret in secrets)
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{name}: the same secret is given twice")
    return keys


def parse_secret(secret: str, name: str = SETTING) -> bytes:
    """Return the HMAC key of a `whsec_<base64>` secret; raise ConfigError on a bad format.

    Taken: canonical standard base64 (RFC 4648: `+` and `/`, `=` padding, no stray bits), the
    one form every official Standard Webhooks library reads. A secret missing only its `=`
    padding is taken too and padded (`padding_missing` says how much): it names one key, and
    refusing it would stop every tick of a setup that worked. Anything else is refused rather
    than guessed at, because the libraries would disagree on its key: Python's drops `-` and
    `_`, Java's refuses them; Rust's refuses a last character with stray bits, Go's ignores them.
    """
    return base64.b64decode(_canonical(secret, name))


def padding_missing(secret: str) -> int:
    """Return how many `=` a valid secret lacks (0 when it is canonical)."""
    return len(_canonical(secret)) - len(secret.removeprefix(_SECRET_PREFIX))


def _canonical(secret: str, name: str = SETTING) -> str:
    """Return the canonical padded base64 of a secret's key, or raise ConfigError."""
    if not secret.startswith(_SECRET_PREFIX):
        raise ConfigError(f"{name}: must start with 'whsec_' followed by base64")
    encoded = secret[len(_SECRET_PREFIX) :]
    if not encoded.isprintable() or " " in encoded:
        raise ConfigError(f"{name}: the part after 'whsec_' holds spaces or line breaks")
    if "-" in encoded or "_" in encoded:
        raise ConfigError(
            f"{name}: the part after 'whsec_' is URL-safe base64 ('-' or '_'); "
            "Standard Webhooks secrets are standard base64 ('+' and '/')"
        )
    if "=" not in encoded:
        encoded += "=" * (-len(encoded) % 4)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        # `from None`: the decoder's message could quote part of the secret.
        raise ConfigError(f"{name}: the part after 'whsec_' is not base64") from None
    if not key:
        raise ConfigError(f"{name}: the key after 'whsec_' is empty")
    if base64.b64encode(key).decode("ascii") != encoded:
        raise ConfigError(
            f"{name}: the part after 'whsec_' is not canonical base64 (its last "
            "character before the padding carries stray bits, or the padding is misplaced)"
        )
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"{name}: the key is only {len(key)} bytes; Standard Webhooks "
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
    """Sign message after message with one key, or several (rotation: one signature per key,
    space-separated in the one header).

    Each key's HMAC state is prepared once and copied per message: hmac.digest sets the key up
    again on every call, which costs a third of a signature.
    """

    __slots__ = ("_keyed",)

    def __init__(self, keys: tuple[bytes, ...]) -> None:
        self._keyed = tuple(hmac.new(key, digestmod=hashlib.sha256) for key in keys)

    def sign(self, msg_id: str, timestamp: int, body: bytes) -> str:
        """Return the `webhook-signature` value of one message (as sign_with_key does, per key)."""
        head = f"{msg_id}.{timestamp}.".encode()
        signatures = []
        for keyed in self._keyed:
            mac = keyed.copy()
            mac.update(head)
            mac.update(body)
            signatures.append("v1," + binascii.b2a_base64(mac.digest(), newline=False).decode())
        return " ".join(signatures)
