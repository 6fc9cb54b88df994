"""A receipt: lines of unit price x quantity, a subtotal, tax and a total, in cents."""

from __future__ import annotations

from dataclasses import dataclass, field

from till.amounts import to_cents
from till.formatting import format_cents


@dataclass(frozen=True)
class Line:
    description: str
    unit_cents: int
    quantity: int

    @property
    def cents(self) -> int:
        return self.unit_cents * self.quantity


@dataclass
class Receipt:
    tax_rate: float = 0.0
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, unit_price: float, quantity: int = 1) -> None:
        self.lines.append(Line(description, to_cents(unit_price), quantity))

    @property
    def subtotal(self) -> int:
        return sum(line.cents for line in self.lines)

    @property
    def tax(self) -> int:
        # subtotal is in cents and tax_rate in percent: divide by 100 twice.
        return to_cents(self.subtotal * self.tax_rate / 10_000)

    @property
    def total(self) -> int:
        return self.subtotal + self.tax

    def render(self) -> str:
        rows = [f"{line.quantity} x {line.description}: {format_cents(line.cents)}" for line in self.lines]
        rows.append(f"Subtotal: {format_cents(self.subtotal)}")
        rows.append(f"Tax: {format_cents(self.tax)}")
        rows.append(f"Total: {format_cents(self.total)}")
        return "\n".join(rows)
