"""Tables of apps/contract/README.md, read at run time so the suite and the contract cannot drift."""

from __future__ import annotations

from pathlib import Path

CONTRACT_README = Path(__file__).resolve().parents[2] / "apps" / "contract" / "README.md"
COUNTERS = ("select", "insert", "update", "delete")


def contract_statement_table(path: Path = CONTRACT_README) -> dict[str, dict[str, int]]:
    """The contract README's "DB statements per request" table: request label -> counts."""
    table: dict[str, dict[str, int]] = {}
    in_section = False
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            in_section = line.strip() == "## DB statements per request"
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if in_section and len(cells) == 5 and all(cell.isdigit() for cell in cells[1:]):
            table[cells[0]] = dict(zip(COUNTERS, map(int, cells[1:])))
    return table
