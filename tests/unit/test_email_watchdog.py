"""The SMTP watchdog cuts an attempt past its deadline, even one still connecting then.

A deadline that passed while connect() was still making the socket found nothing to shut down;
the watchdog then forgot it, and a server dripping its greeting a byte at a time held the tick
for ever (seen under load in tests/e2e/test_faults.py). It now looks again until it can cut.
"""

import threading

from duequeue.channels.email_sender import _Watchdog


def test_a_deadline_with_no_socket_to_cut_yet_is_tried_again_until_one_is_cut() -> None:
    calls: list[bool] = []
    cut = threading.Event()

    def on_expire() -> bool:
        calls.append(len(calls) >= 2)  # no socket on the first two looks, one on the third
        if calls[-1]:
            cut.set()
        return calls[-1]

    dog = _Watchdog(on_expire)
    try:
        dog.arm(0.01)
        assert cut.wait(10)
    finally:
        dog.close()
    assert calls == [False, False, True]
