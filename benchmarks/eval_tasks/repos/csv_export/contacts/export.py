"""The address book's CSV export: one header row, then one row per contact."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contacts.csvfile import format_row

HEADER = ("name", "email", "phone", "notes")


@dataclass(frozen=True)
class Contact:
    name: str
    email: str
    phone: str | None = None
    notes: str = ""


def export_csv(contacts: Iterable[Contact]) -> str:
    """The whole export, sorted by name, as one string."""
    rows = [format_row(HEADER)]
    for c in sorted(contacts, key=lambda c: c.name.casefold()):
        rows.append(format_row((c.name, c.email, c.phone, c.notes)))
    return "".join(rows)
