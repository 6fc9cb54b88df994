"""Money as shown to customers: '$1,234.50', '-$3.10'."""

from __future__ import annotations

from till.amounts import from_cents, to_cents

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


def format_cents(cents: int, currency: str = "USD") -> str:
    symbol = SYMBOLS.get(currency)
    if symbol is None:
        raise ValueError(f"unknown currency {currency!r}")
    sign = "-" if cents < 0 else ""
    return f"{sign}{symbol}{from_cents(abs(cents)):,.2f}"


def format_money(amount: float, currency: str = "USD") -> str:
    """A float amount, rounded to cents, e.g. format_money(1234.5) == '$1,234.50'."""
    return format_cents(to_cents(amount), currency)
