"""Split a sequence into numbered pages (1-based), as the listing endpoints return them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100


class PageOutOfRange(LookupError):
    """The requested page number is past the last page (or below 1)."""

    def __init__(self, number: int, total_pages: int) -> None:
        super().__init__(f"page {number} does not exist; there are {total_pages} pages")
        self.number = number
        self.total_pages = total_pages


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    number: int
    per_page: int
    total_items: int
    total_pages: int

    @property
    def has_next(self) -> bool:
        return self.number < self.total_pages

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def page_count(total_items: int, per_page: int) -> int:
    """How many pages `total_items` fill; an empty listing still has one (empty) page."""
    return max(1, total_items // per_page)


def paginate(items: Sequence[T], number: int = 1, per_page: int = DEFAULT_PER_PAGE) -> Page[T]:
    """Page `number` of `items`, `per_page` items to a page."""
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise ValueError(f"per_page must be between 1 and {MAX_PER_PAGE}, got {per_page}")
    total_pages = page_count(len(items), per_page)
    if not 1 <= number <= total_pages:
        raise PageOutOfRange(number, total_pages)
    start = (number - 1) * per_page
    return Page(
        items=list(items[start : start + per_page]),
        number=number,
        per_page=per_page,
        total_items=len(items),
        total_pages=total_pages,
    )
