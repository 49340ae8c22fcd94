"""The program the common role runs on every host to read the kernel settings it wants and set the CPU
governor (roles/common/files/kernel_settings.py): on files laid out as /proc/sys and cpufreq lay them
out, and once on this machine's own /proc/sys as the role runs it."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import host_program, run_host_program

PROGRAM = Path(__file__).resolve().parents[2] / "roles" / "common" / "files" / "kernel_settings.py"
kernel_settings = host_program(PROGRAM)


def test_each_setting_is_missing_writable_or_read_only_with_its_value_folded(tmp_path: Path) -> None:
    (tmp_path / "net" / "core").mkdir(parents=True)
    (tmp_path / "net" / "core" / "somaxconn").write_text("4096\n")
    (tmp_path / "net" / "ipv4").mkdir()
    ports = tmp_path / "net" / "ipv4" / "ip_local_port_range"
    ports.write_text("32768\t60999\n")
    ports.chmod(0o444)
    found = kernel_settings.probe(["net.core.somaxconn", "net.ipv4.ip_local_port_range", "fs.nr_open"], str(tmp_path))
    assert found["net.core.somaxconn"] == {"state": "writable", "value": "4096"}
    # Whitespace folded as the role compares it with what it wants ("32768 60999"). Its state is the
    # kernel's access check (root writes a 0444 file; a container's read-only /proc/sys it cannot).
    assert found["net.ipv4.ip_local_port_range"]["value"] == "32768 60999"
    assert found["fs.nr_open"] == {"state": "missing", "value": ""}


def test_the_governor_is_written_only_where_it_differs(tmp_path: Path) -> None:
    for cpu, governor in (("cpu0", "performance"), ("cpu1", "powersave")):
        (tmp_path / cpu / "cpufreq").mkdir(parents=True)
        (tmp_path / cpu / "cpufreq" / "scaling_governor").write_text(f"{governor}\n")
    pattern = str(tmp_path / "cpu*" / "cpufreq" / "scaling_governor")
    assert kernel_settings.set_governor("performance", pattern) is True
    assert (tmp_path / "cpu1" / "cpufreq" / "scaling_governor").read_text().strip() == "performance"
    assert kernel_settings.set_governor("performance", pattern) is False


def test_the_probe_reads_this_machines_proc_sys_as_the_role_runs_it() -> None:
    done = run_host_program(PROGRAM, "probe", "kernel.pid_max", "net.perflab.none")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["net.perflab.none"]["state"] == "missing"
    assert found["kernel.pid_max"]["state"] in ("writable", "readonly")
    assert found["kernel.pid_max"]["value"] == Path("/proc/sys/kernel/pid_max").read_text().strip()
