"""Account for every (target, fire) of a fault run: sent once, dead-lettered, retrying, or LOST.

Pure bookkeeping over what the CLI's `history --json` says (the ledger, the dead letters, the
per-target retries, the row) and what the receivers saw; no I/O, so it can be checked by itself.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# (reminder id, fire instant in ms, channel, address): one target's delivery of one fire.
Pair = tuple[int, int, str, str]


def ms(text: str) -> int:
    """Return an ISO 8601 instant as unix milliseconds."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


@dataclass(frozen=True)
class Received:
    """One request or message a receiver took in, and whether it was answered as a success."""

    pair_or_key: Pair | tuple[str, str]  # the pair (webhooks) or (address, Message-ID) (emails)
    success: bool


@dataclass
class Tally:
    """What became of every (target, fire) that was attempted."""

    fires: int = 0  # distinct (reminder, fire) attempted: the cycles
    pairs: int = 0  # distinct (target, fire) attempted
    sent: int = 0
    dead: int = 0
    retrying: int = 0
    transient_beside_success: int = 0  # the population issue 12 counted
    transient_beside_success_sent: int = 0
    attempts: int = 0
    skipped_fires: int = 0  # fires of recurring rows coalesced while the row retried a fire
    outcomes: Counter[str] = field(default_factory=Counter)
    lost: list[Pair] = field(default_factory=list)
    sent_twice: list[Pair] = field(default_factory=list)
    receiver_repeats: list[str] = field(default_factory=list)
    unconfirmed: list[Pair] = field(default_factory=list)  # ledger `sent`, receiver never 2xx
    unrecorded: list[str] = field(default_factory=list)  # receiver saw more than the ledger has
    # Issue 22: each target's tries are its own, counted by the ledger.
    over_tried: list[str] = field(default_factory=list)  # failed more than MAX_RETRIES times
    renumbered: list[str] = field(default_factory=list)  # one attempt number twice
    miscounted: list[str] = field(default_factory=list)  # a dead letter not its targets' count

    @property
    def problems(self) -> list[str]:
        """Return one line per broken promise; empty when every pair is accounted for."""
        return (
            [f"LOST {p}" for p in self.lost]
            + [f"sent twice {p}" for p in self.sent_twice]
            + [f"receiver repeat {r}" for r in self.receiver_repeats]
            + [f"ledger sent, receiver never answered 2xx {p}" for p in self.unconfirmed]
            + [f"not in the ledger {r}" for r in self.unrecorded]
            + [f"tried more than MAX_RETRIES times {r}" for r in self.over_tried]
            + [f"attempt numbered twice {r}" for r in self.renumbered]
            + [f"dead letter miscounted {r}" for r in self.miscounted]
        )


def _timeouts(errors: Iterable[str | None]) -> int:
    # A success answered after the client gave up looks like a failure to the sender: its
    # retry may reach the receiver twice, which Standard Webhooks' stable id is for.
    return sum(1 for e in errors if e and "timeout" in e.lower())


def audit(
    histories: Sequence[Mapping[str, Any]],
    webhooks: Sequence[Received],
    emails: Sequence[Received],
    max_retries: int = 3,
) -> Tally:
    """Classify every attempted (target, fire) of `histories` (each `history --json`)."""
    t = Tally()
    attempts: dict[Pair, list[Mapping[str, Any]]] = defaultdict(list)
    dead_fires: set[tuple[int, int]] = set()
    retrying: set[Pair] = set()
    row_retrying: set[tuple[int, int]] = set()
    for h in histories:
        rid = int(h["reminder"]["id"])
        for a in h["attempts"]:
            target = a["target"]
            attempts[(rid, ms(a["fire_at"]), target["channel"], target["address"])].append(a)
        dead_fires.update((rid, ms(d["fire_at"])) for d in h["dead_letters"] if not d["retried_at"])
        for r in h["target_retries"]:
            retrying.add((rid, ms(r["fire_at"]), r["target"]["channel"], r["target"]["address"]))
        row = h["reminder"]
        t.skipped_fires += int(row.get("skipped_fires") or 0)
        if row.get("state") == "pending" and row.get("error_count") and row.get("next_fire_at"):
            # A fire that failed on every target waits on the row itself, not on target_retries.
            row_retrying.add((rid, ms(row["fire_at"])))
    t.pairs = len(attempts)
    t.fires = len({(rid, fire) for rid, fire, _, _ in attempts})
    _beside_success(attempts, t)
    for pair, tries in attempts.items():
        t.attempts += len(tries)
        t.outcomes.update(a["outcome"] for a in tries)
        sent = sum(a["outcome"] == "sent" for a in tries)
        if sent > 1:
            t.sent_twice.append(pair)
        if sent:
            t.sent += 1
        elif pair in retrying or pair[:2] in row_retrying:
            t.retrying += 1
        elif pair[:2] in dead_fires:
            t.dead += 1
        else:
            t.lost.append(pair)
    _check_webhooks(attempts, webhooks, t)
    _check_emails(attempts, emails, t)
    _check_counts(histories, attempts, max_retries, t)
    return t


def _check_counts(
    histories: Sequence[Mapping[str, Any]],
    attempts: Mapping[Pair, Sequence[Mapping[str, Any]]],
    max_retries: int,
    t: Tally,
) -> None:
    """Each target's tries are its own (issue 22): at most max_retries failures a fire, each
    attempt numbered once, and a dead letter counting its dead targets' own failures and
    quoting their errors."""
    failures: dict[tuple[int, int], list[int]] = defaultdict(list)
    for pair, tries in attempts.items():
        failed = sum(a["outcome"] != "sent" for a in tries)
        if failed > max_retries:
            t.over_tried.append(f"{pair}: {failed} failures")
        numbers = [int(a["attempt"]) for a in tries]
        if len(numbers) != len(set(numbers)):
            t.renumbered.append(f"{pair}: attempts {sorted(numbers)}")
        if not any(a["outcome"] == "sent" for a in tries):
            failures[pair[:2]].append(failed)
    for h in histories:
        rid = int(h["reminder"]["id"])
        for d in h["dead_letters"]:
            fire = (rid, ms(d["fire_at"]))
            counts = failures.get(fire, [])
            error = d["last_error"] or ""
            if "refused for good on an earlier attempt" in error:
                t.miscounted.append(f"{fire}: {error}")
            elif counts and d["error_count"] != max(counts):
                t.miscounted.append(f"{fire}: error_count {d['error_count']}, targets {counts}")


def _beside_success(attempts: Mapping[Pair, Sequence[Mapping[str, Any]]], t: Tally) -> None:
    """Count pairs that failed transiently in the same tick as another target of the fire got it.

    The clock is frozen for a tick, so an attempt's `at` names the tick it ran in.
    """
    sent_at: set[tuple[int, int, str]] = set()
    for (rid, fire, _, _), tries in attempts.items():
        sent_at.update((rid, fire, a["at"]) for a in tries if a["outcome"] == "sent")
    for (rid, fire, _, _), tries in attempts.items():
        if any(a["outcome"] == "failed" and (rid, fire, a["at"]) in sent_at for a in tries):
            t.transient_beside_success += 1
            t.transient_beside_success_sent += any(a["outcome"] == "sent" for a in tries)


def _check_webhooks(
    attempts: Mapping[Pair, Sequence[Mapping[str, Any]]], webhooks: Sequence[Received], t: Tally
) -> None:
    seen: Counter[Pair | tuple[str, str]] = Counter(w.pair_or_key for w in webhooks)
    ok: Counter[Pair | tuple[str, str]] = Counter(w.pair_or_key for w in webhooks if w.success)
    for key, n in seen.items():
        tries = attempts.get(key, ()) if len(key) == 4 else ()
        if n > len(tries):
            t.unrecorded.append(f"{key}: {n} requests, {len(tries)} attempts in the ledger")
        if ok[key] > 1 + _timeouts(a["error"] for a in tries):
            t.receiver_repeats.append(f"{key}: answered 2xx {ok[key]} times")
    for pair, tries in attempts.items():
        if pair[2] == "webhook" and any(a["outcome"] == "sent" for a in tries) and not ok[pair]:
            t.unconfirmed.append(pair)


def _check_emails(
    attempts: Mapping[Pair, Sequence[Mapping[str, Any]]], emails: Sequence[Received], t: Tally
) -> None:
    accepted: Counter[Pair | tuple[str, str]] = Counter(e.pair_or_key for e in emails)
    timeouts: Counter[str] = Counter()
    sent: Counter[str] = Counter()
    for (_, _, channel, address), tries in attempts.items():
        if channel == "email":
            timeouts[address] += _timeouts(a["error"] for a in tries)
            sent[address] += any(a["outcome"] == "sent" for a in tries)
    by_address: Counter[str] = Counter()
    for key, n in accepted.items():
        address = str(key[0])
        by_address[address] += n
        if n > 1 + timeouts[address]:
            t.receiver_repeats.append(f"{key}: accepted {n} times")
    for address in by_address.keys() | sent.keys():
        n = by_address[address]
        if n > sent[address] + timeouts[address]:
            t.unrecorded.append(f"{address}: {n} accepted, {sent[address]} sent in the ledger")
        if n < sent[address]:
            t.unconfirmed.append((0, 0, "email", f"{address}: {n} accepted, {sent[address]} sent"))
