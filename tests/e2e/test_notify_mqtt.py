"""An MQTT broker that refuses the login is a permanent failure, as SMTP's refused login is: a
dead letter at once, not three tries (issue 24, item 11). A real Mosquitto on loopback, with a
password file of its own; its right login delivers."""

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.procs import LIMIT_S
from tests.servers import free_port

pytest.importorskip("paho.mqtt.client", reason="Apprise's mqtt:// needs paho-mqtt (test extra)")
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@dataclass
class Broker:
    port: int
    log: list[str]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    if not (os.path.exists(MOSQUITTO) and shutil.which("mosquitto_passwd")):
        pytest.skip("needs mosquitto and mosquitto_passwd (apt install mosquitto)")
    passwords = tmp_path / "passwd"
    subprocess.run(
        ["mosquitto_passwd", "-b", "-c", str(passwords), "alice", "right"],
        check=True,
        capture_output=True,
        timeout=LIMIT_S,
    )
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    lines = [
        f"listener {port} 127.0.0.1",
        "allow_anonymous false",
        f"password_file {passwords}",
        "log_dest stderr",  # unbuffered: the "running" line arrives when it is true
        "log_type all",
    ]
    if os.geteuid() == 0:
        lines.append("user root")  # else it drops to `mosquitto`, who cannot read the file
    conf.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        [MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    log: list[str] = []
    reader: threading.Thread | None = None
    try:
        for line in proc.stderr:  # ready once it says it is running (no sleep, no polling)
            log.append(line)
            if " running" in line:
                break
        else:
            pytest.fail("mosquitto did not start: " + "".join(log))
        # Keep reading its log, or a full pipe would stall the broker.
        reader = threading.Thread(target=lambda: log.extend(proc.stderr or ()), daemon=True)
        reader.start()
        yield Broker(port, log)
    finally:  # also when the start failed or timed out: never leave a broker behind
        proc.terminate()
        proc.wait(timeout=LIMIT_S)
        if reader is not None:
            reader.join(timeout=LIMIT_S)


def test_a_refused_mqtt_login_is_a_dead_letter_at_once(db_path: Path, broker: Broker) -> None:
    cli = Cli(db_path, T0, {"DUEQUEUE_CHANNEL_TIMEOUT": "5"})
    url = f"mqtt://alice:wrong@127.0.0.1:{broker.port}/reminders"
    rid = cli.add("--at", "now", "--notify", url)
    summary = cli.tick()
    assert (summary["dead"], summary["retried"]) == (1, 0), (summary, broker.log)
    (dead,) = cli.inspect("--dead")
    assert dead["id"] == rid
    assert dead["last_error"].startswith("notify mqtt://")
    assert "MQTT login refused by the broker: " in dead["last_error"]
    assert "wrong" not in dead["last_error"]
    (attempt,) = cli("history", str(rid), "--json").json()["attempts"]
    assert attempt["outcome"] == "permanent"


def test_the_right_mqtt_login_delivers(db_path: Path, broker: Broker) -> None:
    cli = Cli(db_path, T0, {"DUEQUEUE_CHANNEL_TIMEOUT": "5"})
    cli.add("--at", "now", "--notify", f"mqtt://alice:right@127.0.0.1:{broker.port}/reminders")
    assert cli.tick()["sent"] == 1
