"""Hosts as Linux network namespaces, joined by two bridges, all inside this run.

    with Network() as net:
        db = net.host("db", dbnet=True)           # 10.213.1.x on the database's bridge
        rx = net.host("rx", rxnet=True)           # 10.213.2.x on the receivers' bridge
        h1 = net.host("h1", dbnet=True, rxnet=True)
        net.cut(h1, "db")                          # h1 no longer reaches the database
        net.heal(h1, "db")

The bridges live in a namespace of their own (the "switch"), so nothing is added to the machine's
own namespace: no address, no link, no route. Every namespace name carries the run's pid, and
`close()` (also at exit) deletes them, which deletes their links and bridges with them.

A cut takes the switch's end of a host's veth down: the host's own end stays up with its route
but loses its carrier, so packets go nowhere and nothing answers, the way a pulled cable or a
dead switch port looks to TCP (no "network unreachable" error that would end a wait at once).
"""

import atexit
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Net = Literal["db", "rx"]
SUBNET = {"db": "10.213.1", "rx": "10.213.2"}
PREFIX = 24


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one iproute2 (or other) command; a failure raises with its stderr."""
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done


def namespaces_available() -> str | None:
    """Return why namespaces cannot be made here, or None when they can (a trial one is made)."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs the suite as root)"
    trial = f"dqtrial{os.getpid()}"
    try:
        done = run("ip", "netns", "add", trial, check=False)
    except FileNotFoundError:
        return "iproute2's `ip` is not installed (apt-get install -y iproute2)"
    if done.returncode != 0:
        return f"`ip netns add` fails here: {done.stderr.strip()}"
    run("ip", "netns", "del", trial, check=False)
    return None


@dataclass(frozen=True)
class Host:
    """One namespace: its name and its address on each network it is on."""

    name: str  # the namespace's name, unique to this run
    label: str  # the short name the test gave it
    addr: dict[str, str]

    def exec_prefix(self) -> list[str]:
        """The command prefix that runs a program inside this host."""
        return ["ip", "netns", "exec", self.name]


class Network:
    """Namespaces with veth links to two bridges; see the module's docstring."""

    def __init__(self) -> None:
        self.tag = f"dq{os.getpid()}"
        self.switch = f"{self.tag}sw"
        self.hosts: list[Host] = []
        self._namespaces: list[str] = []
        self._next = {"db": 10, "rx": 10}
        atexit.register(self.close)
        self._add_ns(self.switch)
        for net in ("db", "rx"):
            self._ip(self.switch, "link", "add", f"br{net}", "type", "bridge")
            self._ip(self.switch, "link", "set", f"br{net}", "up")

    def _ip(self, ns: str, *args: str) -> None:
        run("ip", "-n", ns, *args)

    def _add_ns(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self._namespaces.append(name)
        self._ip(name, "link", "set", "lo", "up")

    def host(self, label: str, nets: Sequence[Net]) -> Host:
        """Make a namespace with one veth on each of `nets`' bridges; return it."""
        name = f"{self.tag}{label}"
        self._add_ns(name)
        addr: dict[str, str] = {}
        for net in nets:
            self._next[net] += 1
            ip = f"{SUBNET[net]}.{self._next[net]}"
            inner, outer = f"{net}0", f"{label}{net}"[:15]
            run(
                "ip", "link", "add", inner, "netns", name, "type", "veth",
                "peer", "name", outer, "netns", self.switch,
            )  # fmt: skip
            self._ip(self.switch, "link", "set", outer, "master", f"br{net}")
            self._ip(self.switch, "link", "set", outer, "up")
            self._ip(name, "addr", "add", f"{ip}/{PREFIX}", "dev", inner)
            self._ip(name, "link", "set", inner, "up")
            addr[net] = ip
        host = Host(name, label, addr)
        self.hosts.append(host)
        return host

    def cut(self, host: Host, net: Net) -> None:
        """Take `host`'s link to `net` down at the switch: its packets there go nowhere."""
        self._ip(self.switch, "link", "set", f"{host.label}{net}"[:15], "down")

    def heal(self, host: Host, net: Net) -> None:
        """Bring the link `cut` took down back up."""
        self._ip(self.switch, "link", "set", f"{host.label}{net}"[:15], "up")

    def close(self) -> None:
        """Delete every namespace of this run (their links and bridges go with them)."""
        while self._namespaces:
            run("ip", "netns", "del", self._namespaces.pop(), check=False)

    def __enter__(self) -> "Network":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
