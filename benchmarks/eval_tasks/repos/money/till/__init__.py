"""Amounts in cents, money formatting and receipts."""

from till.amounts import from_cents, to_cents
from till.formatting import format_cents, format_money
from till.receipt import Receipt

__all__ = ["Receipt", "format_cents", "format_money", "from_cents", "to_cents"]
