"""Settings from flags > environment (DUEQUEUE_*) > TOML config file > defaults, validated once."""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

from platformdirs import user_config_path, user_data_path

from duequeue.errors import BadInputError, ConfigError
from duequeue.rules.retry_policy import RetryPolicy
from duequeue.shared.timefmt import parse_duration

APP_NAME = "duequeue"
CLOCKS = ("database", "host")


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective settings of one command run."""

    db: str
    smtp_url: str | None = None
    # The SMTP login when the URL carries none (a password with characters a URL must escape).
    smtp_user: str | None = None
    smtp_password: str | None = None
    email_from: str | None = None
    webhook_secret: str | None = None
    max_retries: int = 3
    backoff: str = "1m,5m,30m"
    tick_limit: int = 100
    channel_timeout: float = 10.0
    tick_budget: float = 50.0
    concurrency: int = 64
    # Webhooks in flight to one host:port (endpoints.py): a small receiver keeps up (README);
    # benchmarks/NOTES.md (issue 13) has why 16 and not 8.
    webhook_per_host: int = 16
    tz: str = "UTC"
    busy_timeout: float = 5.0
    webhook_block_private: bool = False
    # Whether notify targets get the reminder's `data` (as JSON under the body); webhooks always do.
    notify_data: bool = False
    # Claimed rows after which a tick commits, and makes its next claims, through a helper
    # process (engine/helper.py); set it high to keep all of that in the tick's own process.
    commit_helper_rows: int = 1000
    # Modules that register more channels (channels/registry.py), comma-separated: imported
    # before the settings are read, so that the settings those channels declare are read too.
    channels: str = ""
    # Whose clock a tick on a shared database judges what is due and when a lease ends by:
    # "database" (the server's, read once a tick) or "host" (this host's, as on SQLite).
    clock: str = "database"
    # The name this host's ticks are noted under on a shared database (`stats`); "" means the
    # machine's host name.
    host: str = ""
    # The token `serve` asks of the API (Bearer) and the dashboard's login; without one, serve
    # listens on the loopback interface only.
    web_token: str | None = None
    # A second token for `serve` that reads everything and changes nothing.
    web_read_token: str | None = None
    # The peers whose X-Forwarded-* / Forwarded headers `serve` believes (IPs and networks,
    # comma-separated, or `*`); "" believes nobody's (duequeue/web/proxy.py).
    web_forwarded_allow_ips: str = ""
    # Where a person hears of new dead letters (operations/alert.py): email addresses, webhook
    # and Apprise URLs, space-separated; one message per tick that wrote any. None: nobody.
    alert: str | None = None
    # The values of those channels' own settings, by name (not a setting itself).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def by_name(self) -> dict[str, Any]:
        """Return every setting by its name, the channels' own included: what a channel reads
        its settings from."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**values, **self.extra}

    @property
    def retry_policy(self) -> RetryPolicy:
        """Return the retry policy these settings describe."""
        return RetryPolicy(self.max_retries, parse_backoff(self.backoff))

    @property
    def lease_ms(self) -> int:
        """Return how long a tick holds the rows it claims.

        Longer than the slowest possible delivery of a batch, so a live tick never has its rows
        taken: no delivery is queued after the budget; one that has started ends within the
        channel timeout, which bounds a whole attempt (webhook: connect to last byte; email:
        connect, TLS, login and the transaction, cut by a watchdog), and one email may be queued
        behind the one on the wire, hence twice that; closing the SMTP connection takes at most
        one more timeout; recording the last outcomes, writing back and releasing each wait at
        most the busy timeout. The 20x timeout and the minute on top are headroom, not
        arithmetic: a lease too long only delays recovery after a crash.
        """
        return round(
            (self.tick_budget + 20 * self.channel_timeout + 3 * self.busy_timeout + 60) * 1000
        )


_ENV_PREFIX = "DUEQUEUE_"


def default_db_path() -> Path:
    """Return the default database path under the user data dir."""
    return user_data_path(APP_NAME) / "duequeue.db"


def default_config_path() -> Path:
    """Return the default config file path under the user config dir."""
    return user_config_path(APP_NAME) / "config.toml"


def parse_backoff(text: str) -> tuple[int, ...]:
    """Parse a backoff table such as 1m,5m,30m into milliseconds."""
    steps = [s for s in text.split(",") if s.strip()]
    if not steps:
        raise ConfigError("give at least one step, such as 1m,5m,30m", field="backoff")
    try:
        return tuple(int(parse_duration(s, "backoff").total_seconds() * 1000) for s in steps)
    except BadInputError as exc:
        raise ConfigError(exc.detail, field="backoff") from exc


class Origins(NamedTuple):
    """Where the settings of one run came from, for `config`.

    A NamedTuple, not a dataclass: every run loads this module, and a dataclass is three times
    as costly to define (about 1% of cron's empty tick).
    """

    config_file: Path  # the file looked for (--config, DUEQUEUE_CONFIG or the default)
    config_file_read: bool  # False: there was no such file (allowed for the default only)
    # setting -> "argument" (given by the caller: a CLI flag, a Queue keyword), "DUEQUEUE_X",
    # "config file" or "default"
    sources: dict[str, str]


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | None = None,
) -> Settings:
    """Merge flags, environment, config file and defaults into validated Settings."""
    return load_settings_traced(flags, env, config_file)[0]


def load_settings_traced(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | None = None,
) -> tuple[Settings, Origins]:
    """Load the settings as load_settings does, and say where each value came from."""
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    explicit = config_file or env.get(_ENV_PREFIX + "CONFIG")
    path = Path(explicit) if explicit else default_config_path()
    from_file = _read_config_file(path, required=bool(explicit))
    merged: dict[str, Any] = dict(from_file or {})
    sources = dict.fromkeys(merged, "config file")
    own = {f.name for f in fields(Settings)} - {"extra"}
    modules = flags.get("channels") or env.get(env_name("channels")) or merged.get("channels")
    declared = _channel_settings(str(modules)) if modules else {}
    names = own | declared.keys()
    for name in names:
        value = env.get(env_name(name))
        if value not in (None, ""):
            merged[name] = value
            sources[name] = env_name(name)
    merged.update(flags)
    sources.update(dict.fromkeys(flags, "argument"))
    merged.setdefault("db", str(default_db_path()))
    extra = {name: merged.pop(name, default) for name, default in declared.items()}
    settings = _validate(merged, own, env)
    if extra:
        settings = replace(settings, extra=extra)
    origins = Origins(
        path,
        from_file is not None,
        {name: sources.get(name, "default") for name in sorted(names)},
    )
    return settings, origins


def _channel_settings(modules: str) -> dict[str, Any]:
    """Import the modules that register more channels; return the settings those channels
    declare, with their defaults."""
    import importlib  # lazy: only a configuration that names channel modules needs it

    from duequeue.channels import registry  # lazy: likewise

    for name in (m.strip() for m in modules.split(",")):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise ConfigError(f"cannot import {name!r}: {exc}", field="channels") from exc
    return registry.declared_settings()


def _read_config_file(path: Path, *, required: bool) -> dict[str, Any] | None:
    """Return the file's settings; None if there is no such file (and none was asked for)."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} does not exist") from None
        return None
    except PermissionError as exc:
        raise ConfigError(_unreadable(path)) from exc
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from exc
    import tomllib  # lazy: cron's usual tick has no config file to read

    try:
        with f:
            raw = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from exc
    return {k.replace("-", "_"): v for k, v in raw.items()}


def _unreadable(path: Path) -> str:
    """Say who owns a config file this user may not read, and how to let it (one line)."""
    # Lazy: only a config file this user may not read needs the user and group databases.
    import grp
    import pwd

    def name(lookup: Any, key: int) -> str:
        try:
            return str(lookup(key)[0])
        except KeyError:
            return str(key)

    me = name(pwd.getpwuid, os.geteuid())
    try:
        info = path.stat()
    except OSError:
        return f"config file {path}: {me} cannot reach it (a directory on the way is closed to it)"
    owner, group = name(pwd.getpwuid, info.st_uid), name(grp.getgrgid, info.st_gid)
    shown = f"config file {path} is {owner}:{group} with mode {info.st_mode & 0o777:04o}"
    if info.st_gid in {os.getegid(), *os.getgroups()}:
        # Already in the group (the README's install): only the mode is missing its read bit.
        return (
            f"{shown}, so {me} (in group {group}) cannot read it: `chmod g+r {path}`, "
            f"or run duequeue as {owner}"
        )
    return (
        f"{shown}, so {me} cannot read it: run duequeue as {owner}, or add {me} to group "
        f"{group} and `chmod g+r {path}`"
    )


def _validate(merged: dict[str, Any], names: set[str], env: Mapping[str, str]) -> Settings:
    unknown = sorted(set(merged) - names)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(names))}")
    values: dict[str, Any] = {}
    for f in fields(Settings):
        if f.name not in merged:
            continue
        raw = merged[f.name]
        try:
            if f.type in (bool, "bool"):
                value: Any = _parse_bool(raw, f.name)
            elif f.type in (int, "int"):
                value = int(raw)
            elif f.type in (float, "float"):
                value = float(raw)
            else:
                value = str(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{raw!r} is not a number", field=f.name) from None
        if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
            raise ConfigError(f"must be greater than 0, got {raw!r}", field=f.name)
        if isinstance(value, str) and not _encodable(value):
            # Bytes that are not UTF-8 (in the environment or argv) arrive as lone surrogates:
            # no file name, database URL or header can carry them.
            raise ConfigError("not valid UTF-8 text", field=f.name)
        values[f.name] = value
    settings = Settings(**values)
    settings.retry_policy  # noqa: B018 - validates the backoff table once, up front
    # Checked here, once, so a bad secret or SMTP URL stops every command with exit 1 before
    # a tick leases rows it then could not deliver.
    try:
        if settings.webhook_secret is not None:
            from duequeue.channels.signing import parse_secrets  # lazy: only when set

            parse_secrets(settings.webhook_secret)
        if settings.smtp_url is not None:
            from duequeue.channels.smtpurl import parse_smtp_url  # lazy: only when set

            parse_smtp_url(settings.smtp_url, settings.smtp_user, settings.smtp_password)
    except ConfigError as exc:
        raise _by_setting(exc) from None
    if settings.alert is not None:
        from duequeue.config import alert_targets  # lazy: only when set

        alert_targets.parse(settings.alert, settings.by_name())
    if settings.clock not in CLOCKS:
        raise ConfigError(
            f"{settings.clock!r} is not a clock; choose database or host", field="clock"
        )
    if settings.email_from is not None:
        _check_email_from(settings.email_from)
    if settings.tz != "UTC":  # UTC needs no tz database: the usual tick loads none
        _check_zone(settings.tz)
    return settings


def _check_email_from(value: str) -> None:
    """Accept `addr@domain` or `Name <addr@domain>`, as the From header and envelope take it."""
    from duequeue.channels.email import is_address  # lazy: only when set

    name, bracket, rest = value.partition("<")
    address = rest.removesuffix(">") if bracket else value
    # isprintable: no control character may reach a mail header (CR/LF would inject one).
    well_formed = not bracket or (rest.endswith(">") and ">" not in name)
    if not (well_formed and value.isprintable() and is_address(address.strip())):
        raise ConfigError(
            f"{value!r} is not an email address "
            "(give reminders@example.com or 'Reminders <reminders@example.com>')",
            field="email_from",
        )


def _check_zone(name: str) -> None:
    # Lazy: zones loads zoneinfo, which cron's tick in the default zone (UTC) never needs.
    from duequeue.schedule import zones

    try:
        zones.zone(name)
    except (KeyError, ValueError, OSError):
        raise ConfigError(
            f"unknown time zone {name!r}: give an IANA name such as "
            f"Europe/Berlin (tz data {zones.in_use().describe()})",
            field="tz",
        ) from None


def env_name(setting: str) -> str:
    """Return the environment variable of a setting: `smtp_url` -> DUEQUEUE_SMTP_URL."""
    return _ENV_PREFIX + setting.upper()


def _by_setting(exc: ConfigError) -> ConfigError:
    """Return a channel's `DUEQUEUE_NAME: detail` error as one about the setting `name`."""
    name, sep, detail = exc.detail.partition(": ")
    if not (sep and name.startswith(_ENV_PREFIX)):
        return exc
    return ConfigError(detail, field=name.removeprefix(_ENV_PREFIX).lower())


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parse_bool(raw: Any, field: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise ConfigError(f"{raw!r} is not a yes/no value (use 1/0, true/false, yes/no)", field=field)


def masked(settings: Settings) -> dict[str, Any]:
    """Return the settings as a dict with secrets masked, for display; the channels' own
    settings after duequeue's, a value whose name says it is a secret masked whole."""
    out: dict[str, Any] = {}
    for name, value in settings.by_name().items():
        if name == "webhook_secret" and value:
            value = "whsec_****"
        elif name in ("smtp_password", "web_token", "web_read_token") and value:
            value = "****"
        elif name in ("smtp_url", "db") and value:
            from duequeue.shared import redact  # lazy: only shown settings need it

            value = redact.url(value)  # a postgresql:// URL may carry a password too
        elif name == "alert" and value:
            from duequeue.config import alert_targets  # lazy: only shown settings need it

            value = alert_targets.shown(alert_targets.parse(value, settings.by_name()))
        elif name in settings.extra and value and _SECRET_NAME.search(name):
            value = "****"
        out[name] = value
    return out


# A channel's own setting whose name says it holds a secret (sms_api_key, chat_token, ...).
_SECRET_NAME = re.compile(r"secret|password|passwd|token|key", re.IGNORECASE)
