"""`DUEQUEUE_ALERT`: dead letters reach a person. After a tick that wrote new dead letters, one
message to each alert target (an email address, a webhook, an Apprise URL: config/alert_targets.py)
naming them and the command that retries them. The tick's work is done and written back before
this starts, and a failing alert target is one line in the tick's summary, never a failed tick."""

import asyncio
import shlex
from collections.abc import Callable

from duequeue.channels import registry
from duequeue.channels.base import Message, Outcome
from duequeue.config import alert_targets
from duequeue.config.settings import Settings
from duequeue.engine.summary import TickSummary
from duequeue.shared import redact
from duequeue.shared.timefmt import from_ms, to_ms

# The dead letters one message names; the rest are counted (a mass outage can kill thousands in
# one tick, and `inspect` lists them all).
LISTED = 20


def message(summary: TickSummary, db: str) -> Message:
    """Return the alert about `summary`'s dead letters, on the database `db` (shown masked)."""
    letters = summary.dead_letters
    where = redact.url(db)
    ids = sorted({rid for rid, _, _ in letters})
    # `retry` re-arms every dead fire of the reminders named (sent targets are not sent again).
    retry = f"duequeue --db {shlex.quote(where)} retry " + (
        " ".join(map(str, ids)) if len(ids) <= LISTED else "--all-dead"
    )
    count = len(letters)
    lines = [
        f"{count} new dead letter{'s' if count != 1 else ''} on {where}, written by the tick "
        f"at {_iso(to_ms(summary.at))}:",
        "",
        *(
            f"  reminder {rid}, fire {_iso(fire)}: {error or 'no error recorded'}"
            for rid, fire, error in letters[:LISTED]
        ),
        *([f"  ... and {count - LISTED} more"] if count > LISTED else []),
        "",
        f"Retry them: {retry}",
        f"See them:   duequeue --db {shlex.quote(where)} inspect",
    ]
    return Message(
        reminder_id=0,
        fire_at=summary.at,
        subject=f"duequeue: {count} new dead letter{'s' if count != 1 else ''}",
        body="\n".join(lines),
        data={
            "event": "dead_letters",
            "db": where,
            "count": count,
            "dead_letters": [
                {"reminder_id": rid, "fire_at": _iso(fire), "error": error}
                for rid, fire, error in letters[:LISTED]
            ],
            "retry": retry,
        },
        # Stable for this tick's alert, so a receiver can tell a resend: the webhook-id.
        delivery_id=f"dq_alert_{to_ms(summary.at)}_{letters[0][0]}_{letters[0][1]}",
    )


def send(settings: Settings, summary: TickSummary, clock: Callable[[], int]) -> str | None:
    """Send the alert about `summary`'s new dead letters to every alert target; return why it
    did not reach one (None: it reached all, or there was nothing to tell or nobody to tell)."""
    if not summary.dead_letters or settings.alert is None:
        return None
    by_name = settings.by_name()
    targets = alert_targets.parse(settings.alert, by_name)
    msg = message(summary, settings.db)
    opening = registry.Opening(
        settings.channel_timeout, lambda: clock() / 1000, {**by_name, "concurrency": 1}
    )

    async def deliver() -> list[str]:
        async with registry.Senders(opening) as senders:
            await senders.open({channel for channel, _ in targets})
            lanes = await asyncio.gather(
                *(_in_turn(senders, msg, channel, targets) for channel in _channels(targets))
            )
        outcomes = dict(pair for lane in lanes for pair in lane)
        return [
            f"{registry.label(channel, address)}: {outcomes[n].error}"
            for n, (channel, address) in enumerate(targets)
            if outcomes[n].status != "sent"
        ]

    try:
        # Each send is bounded by the channel timeout; twice that bounds opening and closing too.
        failures = asyncio.run(asyncio.wait_for(deliver(), 2 * settings.channel_timeout + 1))
    except TimeoutError:
        return f"no answer within {2 * settings.channel_timeout + 1:g}s"
    except Exception as exc:  # an alert must never fail the tick it reports on
        return f"{type(exc).__name__}: {exc}"
    return "; ".join(failures) or None


def _channels(targets: tuple[alert_targets.AlertTarget, ...]) -> list[str]:
    """Return the channels of `targets`, each once, in the order first named."""
    return list(dict.fromkeys(channel for channel, _ in targets))


async def _in_turn(
    senders: registry.Senders,
    msg: Message,
    channel: str,
    targets: tuple[alert_targets.AlertTarget, ...],
) -> list[tuple[int, Outcome]]:
    """Send `msg` to the targets of `channel`, one after another; return (index, outcome)s.

    One at a time, as each channel was opened for ("concurrency": 1): a channel does not bound
    its callers' sends (a tick's pool of workers does that for its own), and a send waiting for
    the channel's one connection would spend its timeout. Channels still go side by side.
    """
    return [
        (n, await senders.send(msg, channel, address, None))
        for n, (c, address) in enumerate(targets)
        if c == channel
    ]


def _iso(ms: int) -> str:
    return from_ms(ms).strftime("%Y-%m-%dT%H:%M:%SZ")
