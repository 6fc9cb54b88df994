"""Amounts of money: floats from the product feed, integer cents everywhere else."""

from __future__ import annotations

from decimal import Decimal


def to_cents(amount: float) -> int:
    """Whole cents for an amount in currency units, halves rounded away from zero:
    0.125 -> 13, 0.145 -> 15, -1.005 -> -101."""
    return round(amount * 100)


def from_cents(cents: int) -> Decimal:
    """The exact amount in currency units: 268 -> Decimal('2.68')."""
    return Decimal(cents).scaleb(-2)
