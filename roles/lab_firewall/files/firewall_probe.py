"""What lab_firewall's preflight reads on a host (roles/lab_firewall/tasks/preflight.yml), as the login user:
nftables' package state, the controller's address (SSH_CONNECTION's client, else the default gateway) and
each NAME resolved (its addresses, or why it does not resolve).

    python3 -c <this file> NAME...

Prints one JSON object: {"nftables": dpkg's status, "controller": an address or null, "resolved": {NAME: [address,
...] or "does not resolve: ..."}}. Runs on the lab's hosts under their python3: standard library only.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys


def default_gateway(routes: str) -> str | None:
    """The default route's gateway in /proc/net/route's text, or None."""
    for line in routes.splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000" and int(fields[3], 16) & 2:
            return socket.inet_ntoa(int(fields[2], 16).to_bytes(4, "little"))
    return None


def resolve(name: str) -> list[str] | str:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)})
    except socket.gaierror as error:
        return "does not resolve: " + str(error.strerror)


def main(names: list[str]) -> int:
    status = subprocess.run(["dpkg-query", "--show", "--showformat=${db:Status-Status}", "nftables"],
                            capture_output=True, text=True, check=False).stdout
    with open("/proc/net/route", encoding="ascii") as routes:
        gateway = default_gateway(routes.read())
    ssh = os.environ.get("SSH_CONNECTION", "").split()
    print(json.dumps({"nftables": status, "controller": ssh[0] if ssh else gateway,
                      "resolved": {name: resolve(name) for name in names}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
