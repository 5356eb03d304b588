"""`doctor`: check the settings, the database, SMTP, the webhook secret and the zone data."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from duequeue.channels import apprise_urls, registry, smtpprobe
from duequeue.channels.signing import padding_missing, parse_secrets
from duequeue.config.settings import env_name
from duequeue.errors import ConfigError, DuequeueError
from duequeue.schedule import release, zones
from duequeue.shared.timefmt import iso
from duequeue.store import safe_url
from duequeue.store.records import HealthCheck

Check = HealthCheck

_ZONES = ("UTC", "Europe/Berlin", "America/New_York")
_NEWER_TZDATA = "update the tz database: `pip install -U tzdata` or the OS package tzdata"


# A host clock further than this from the database server's is reported (see clock_check).
CLOCK_WARN_MS = 5000


def run(
    load: Callable[[], Any],
    open_store: Callable[[str], Any],
    clock: Callable[[], int] | None = None,
) -> list[Check]:
    """Run every check; `load` returns the Settings (or raises ConfigError); `clock` is this
    host's clock (unix ms), compared with a shared database server's."""
    checks: list[Check] = []
    try:
        settings = load()
    except ConfigError as exc:
        name = _check_name(exc.field)
        # Named as an operator sets it: DUEQUEUE_TZ, whether it came from there or the file.
        detail = str(exc) if exc.field is None else f"{env_name(exc.field)}: {exc.detail}"
        fix = (
            "correct it in the flags, the DUEQUEUE_* environment or the config file "
            "(`duequeue config` shows the effective settings once they are valid)"
        )
        if name == "zone data":
            # The zone is the finding (the message names the tz data in use): a typo, or a
            # zone newer than that data.
            fix = f"set DUEQUEUE_TZ to an IANA zone name; if it is one, {_NEWER_TZDATA}"
            return [Check(name, False, detail, fix)]
        return [Check(name, False, detail, fix), *zone_checks("UTC")]
    checks.append(Check("settings", True, "flags, environment and config file are valid"))
    checks.extend(database_checks(settings.db, open_store, clock))
    checks.extend(tz_release_checks(settings.db, open_store))
    checks.extend(smtp_checks(settings))
    checks.extend(email_targets_check(settings, open_store))
    checks.extend(channels_check(settings, open_store))
    checks.extend(notify_checks(settings, open_store))
    checks.append(secret_check(settings.webhook_secret))
    checks.extend(target_secret_checks(settings, open_store))
    checks.extend(zone_checks(settings.tz))
    return checks


# The check a bad setting is reported under; any other setting is "settings".
_CHECK_OF_SETTING = {
    "webhook_secret": "webhook secret",
    "smtp_url": "smtp",
    "email_from": "email from",
    "tz": "zone data",
}


def _check_name(field: str | None) -> str:
    return _CHECK_OF_SETTING.get(field or "", "settings")


def database_checks(
    db: str, open_store: Callable[[str], Any], clock: Callable[[], int] | None = None
) -> list[Check]:
    """Check that the database exists, opens as duequeue's, and is healthy; on a shared
    database, that this host's clock agrees with the server's."""
    if "://" not in db and not _exists(Path(db)):
        return [
            Check(
                "database",
                False,
                f"{db} does not exist",
                "check --db / DUEQUEUE_DB; `duequeue init` creates the file",
            )
        ]
    try:
        store = open_store(db)
    except DuequeueError as exc:
        return [
            Check("database", False, str(exc), "point --db / DUEQUEUE_DB at duequeue's database")
        ]
    shown = safe_url(db)  # a postgresql:// URL may carry a password
    try:
        found = [Check("database", True, f"{shown} opens"), *store.health(), *_content(store)]
        if clock is not None:
            before = clock()
            server = store.server_ms()
            if server is not None:
                found.append(clock_check((before + clock()) // 2 - server))
        return found
    except Exception as exc:  # a damaged file can fail the checks themselves: that is the finding
        return [
            Check("database", True, f"{shown} opens"),
            Check(
                "database integrity",
                False,
                f"{type(exc).__name__}: {exc}",
                "stop cron, copy the file, then `sqlite3 FILE '.recover' | sqlite3 NEW` "
                "and point --db at NEW",
            ),
        ]
    finally:
        store.close()


def _content(store: Any) -> list[Check]:
    """Warn about a paused queue, and about a database without a single reminder: new, or not
    the one `add` writes to."""
    found = []
    paused = store.queue_paused()
    if paused is not None:
        found.append(
            Check(
                "queue paused",
                True,
                f"paused since {iso(paused)} (`duequeue pause`): ticks deliver nothing",
                "`duequeue resume` when deliveries should go out again",
                warning=True,
            )
        )
    if store.list_view("all", 0, 1):
        return found
    return [
        *found,
        Check(
            "database content",
            True,
            "no reminders at all: a new database, or --db / DUEQUEUE_DB names another file "
            "than the one `add` writes to (ticks on it deliver nothing)",
            "compare --db / DUEQUEUE_DB here with where `duequeue add` ran; ignore this until "
            "the first reminder is added",
            warning=True,
        ),
    ]


def clock_check(offset_ms: int) -> Check:
    """Say how far this host's clock is from the database server's (`offset_ms`: host minus
    server, read halfway through the round trip)."""
    way = "ahead of" if offset_ms > 0 else "behind"
    detail = f"this host's clock is {abs(offset_ms) / 1000:.3f}s {way} the database server's"
    if abs(offset_ms) <= CLOCK_WARN_MS:
        return Check("clock", True, detail)
    return Check(
        "clock",
        False,
        f"{detail} (more than {CLOCK_WARN_MS / 1000:g}s): ticks judge what is due, and stamp "
        "their sends, by the server's clock, but this host's cron schedule, logs and relative "
        "--at times (+15m) follow its own",
        "synchronise the clocks with NTP (`timedatectl set-ntp true`, chrony)",
    )


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a directory this user cannot enter: opening it explains which and why
        return True


def smtp_checks(settings: Any) -> list[Check]:
    """Connect to the SMTP server and say EHLO and NOOP, sending nothing."""
    if not settings.smtp_url:
        return [
            Check(
                "smtp",
                True,
                "DUEQUEUE_SMTP_URL not set: email targets fail until it is (webhooks unaffected)",
            )
        ]
    checks = []
    login = (settings.smtp_user, settings.smtp_password)
    try:
        checks.append(
            Check(
                "smtp",
                True,
                smtpprobe.probe(
                    settings.smtp_url, settings.channel_timeout, *login, settings.email_from
                ),
            )
        )
    except Exception as exc:  # any failure of the probe is the finding, not a crash
        checks.append(
            Check(
                "smtp",
                False,
                smtpprobe.describe(exc, settings.smtp_url, *login),
                smtpprobe.advice(exc),
            )
        )
    if not settings.email_from:
        checks.append(
            Check(
                "email from",
                False,
                "DUEQUEUE_EMAIL_FROM not set: every email delivery fails",
                "set DUEQUEUE_EMAIL_FROM (or email_from in the config file)",
            )
        )
    return checks


def email_targets_check(settings: Any, open_store: Callable[[str], Any]) -> list[Check]:
    """Fail when pending reminders have email targets but no SMTP server is configured."""
    if settings.smtp_url:
        return []
    try:
        store = open_store(settings.db)  # never creates one: a missing database is an error
    except DuequeueError:
        return []  # database_checks reports it
    try:
        if "email" not in store.pending_channels():
            return []
    except DuequeueError:
        return []  # database_checks reports it
    finally:
        store.close()
    return [
        Check(
            "email targets",
            False,
            "pending reminders have email targets but DUEQUEUE_SMTP_URL is not set: "
            "each of those deliveries fails, is retried, then dead-lettered",
            "set DUEQUEUE_SMTP_URL and DUEQUEUE_EMAIL_FROM (or smtp_url and email_from in the "
            "config file), or cancel those reminders",
        )
    ]


def channels_check(settings: Any, open_store: Callable[[str], Any]) -> list[Check]:
    """Fail when pending reminders have targets of a channel this host does not know (one
    registered with DUEQUEUE_CHANNELS, or installed, only where they were added)."""
    try:
        store = open_store(settings.db)
    except DuequeueError:
        return []  # database_checks reports it
    try:
        unknown = sorted(c for c in store.pending_channels() if registry.find(c) is None)
    except DuequeueError:
        return []  # database_checks reports it
    finally:
        store.close()
    if not unknown:
        return []
    names = ", ".join(repr(c) for c in unknown)
    return [
        Check(
            "channels",
            False,
            f"pending reminders have targets of channel {names}, which this host does not "
            "know: each of those sends fails here, is retried, then dead-lettered (the other "
            "targets go out)",
            "name the module that registers it in DUEQUEUE_CHANNELS (or install the package "
            "that provides it) on every host that ticks this queue",
        )
    ]


# Distinct notify URLs doctor reads and checks: enough to find every scheme in use.
_NOTIFY_SAMPLE = 1000


def notify_checks(settings: Any, open_store: Callable[[str], Any]) -> list[Check]:
    """Check that notify targets can go out: the extra is installed and Apprise knows them."""
    try:
        store = open_store(settings.db)
    except DuequeueError:
        return []  # database_checks reports it
    try:
        urls = store.notify_addresses(_NOTIFY_SAMPLE)
    except DuequeueError:
        return []  # database_checks reports it
    finally:
        store.close()
    if not urls:
        return []
    try:
        apprise_urls.apprise_module()
    except apprise_urls.MissingExtraError as exc:
        return [
            Check(
                "notify targets",
                False,
                f"the database has notify targets, but {exc}",
                "pip install 'duequeue[notify]' where the tick runs, or cancel those reminders",
            )
        ]
    bad: dict[str, str] = {}
    for url in urls:
        problem = apprise_urls.problem(url)
        if problem is not None:
            bad.setdefault(url.split("://", 1)[0], problem)
    if bad:
        scheme, problem = sorted(bad.items())[0]
        return [
            Check(
                "notify targets",
                False,
                f"{len(bad)} scheme(s) Apprise cannot send to, e.g. {scheme}://: {problem}",
                "upgrade Apprise (pip install -U apprise), or cancel those reminders",
            )
        ]
    schemes = sorted({u.split("://", 1)[0] for u in urls})
    return [
        Check("notify targets", True, f"Apprise knows every scheme in use: {', '.join(schemes)}")
    ]


def secret_check(secret: str | None) -> Check:
    """Check the webhook secret's format and key length."""
    if secret is None:
        return Check("webhook secret", True, "not set: webhooks are sent unsigned")
    try:
        keys = parse_secrets(secret)
    except ConfigError as exc:  # pragma: no cover - settings validation rejects it first
        return Check("webhook secret", False, str(exc), "set whsec_ followed by base64")
    missing = "=" * max(padding_missing(s) for s in secret.split(" ") if s)
    if missing:
        # duequeue signs fine with it; the receivers given the same text may not.
        return Check(
            "webhook secret",
            False,
            f"the base64 lacks its '{missing}' padding: the Go, Rust, C# and Elixir Standard "
            "Webhooks libraries refuse it",
            f"append '{missing}' to the secret here and at every receiver (same key, same "
            "signatures)",
        )
    sizes = "/".join(str(len(key)) for key in keys)
    rotating = f"; {len(keys)} secrets, each message signed with all" if len(keys) > 1 else ""
    return Check("webhook secret", True, f"whsec_ format, {sizes}-byte key{rotating}")


# Per-target secrets doctor reads: enough for any real queue; a larger one is sampled.
_SECRET_SAMPLE = 10_000


def target_secret_checks(settings: Any, open_store: Callable[[str], Any]) -> list[Check]:
    """Report webhooks whose own secret lacks its base64 padding, as for the global one."""
    try:
        store = open_store(settings.db)
    except DuequeueError:
        return []  # database_checks reports it
    try:
        found = store.target_secrets(_SECRET_SAMPLE)
    except DuequeueError:
        return []  # database_checks reports it
    finally:
        store.close()
    unpadded = sorted(
        {rid for rid, text in found if any(padding_missing(s) for s in text.split(" ") if s)}
    )
    if not unpadded:
        return []
    ids = ", ".join(map(str, unpadded[:10])) + (", ..." if len(unpadded) > 10 else "")
    return [
        Check(
            "webhook secrets of targets",
            False,
            f"{len(unpadded)} reminder(s) have a --webhook-secret that lacks its '=' padding "
            f"(reminders {ids}): the Go, Rust, C# and Elixir Standard Webhooks libraries "
            "refuse it",
            "append the '=' padding at those receivers (same key, same signatures), or cancel "
            "and re-add those reminders with the padded secret",
        )
    ]


def tz_release_checks(db: str, open_store: Callable[[str], Any]) -> list[Check]:
    """Compare the tz release this host reads with the newest the queue's fires were computed
    with: a host with older data never computes fires back, but says what to update."""
    if "://" not in db and not _exists(Path(db)):
        return []  # the database check says so
    mine = zones.in_use()
    try:
        store = open_store(db)
    except DuequeueError:
        return []  # the database check says so
    try:
        queue = store.queue_release()
    except DuequeueError:
        return []
    finally:
        store.close()
    here = mine.describe()
    if mine.version is None:
        return [Check("tz release", False, f"this host reads tz data {here}", _NEWER_TZDATA)]
    if queue is None:
        detail = f"this host reads {here}; the queue has none recorded yet (the next tick does)"
        return [Check("tz release", True, detail)]
    if queue == mine.version:
        detail = f"this host reads {here}; the queue's fires were computed with {queue}"
        return [Check("tz release", True, detail)]
    if release.newer(mine.version, queue):
        detail = (
            f"this host reads {here}, newer than the queue's {queue}: the next tick computes "
            "pending fires again (`duequeue recompute --dry-run` lists what moves)"
        )
        return [Check("tz release", True, detail)]
    return [
        Check(
            "tz release",
            False,
            f"this host reads {here}, older than the queue's {queue}: its ticks leave fires "
            f"newer data computed alone, but what it adds or moves on follows older rules "
            f"until a host with {queue} ticks",
            f"update this host's tz data to {queue} or newer: `pip install -U tzdata`, or the OS "
            "package tzdata (duequeue reads the newer of the two)",
        )
    ]


def zone_checks(default_tz: str) -> list[Check]:
    """Check that the IANA zone data loads, the default zone included, and say which it is."""
    missing = []
    for name in dict.fromkeys((*_ZONES, default_tz)):
        try:
            zones.zone(name)
        except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError
            missing.append(name)
    if missing:
        return [
            Check(
                "zone data",
                False,
                f"cannot load {', '.join(missing)} (tz data {zones.in_use().describe()})",
                _NEWER_TZDATA,
            )
        ]
    loaded = ", ".join(dict.fromkeys((*_ZONES, default_tz)))
    return [Check("zone data", True, f"{loaded} load; tz data {zones.in_use().describe()}")]
