"""The catalogue listing: filter books, then render one page as the endpoint's JSON body."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shelf.paging import DEFAULT_PER_PAGE, paginate


@dataclass(frozen=True)
class Book:
    title: str
    author: str
    year: int


def list_books(
    books: Iterable[Book],
    *,
    author: str | None = None,
    page: int = 1,
    per_page: int = DEFAULT_PER_PAGE,
) -> dict[str, Any]:
    """One page of the catalogue, sorted by title; `author` filters case-insensitively."""
    wanted = author.casefold() if author else None
    matching = sorted(
        (b for b in books if wanted is None or b.author.casefold() == wanted),
        key=lambda b: b.title.casefold(),
    )
    current = paginate(matching, page, per_page)
    return {
        "items": [{"title": b.title, "author": b.author, "year": b.year} for b in current.items],
        "page": current.number,
        "pages": current.total_pages,
        "total": current.total_items,
        "next": current.number + 1 if current.has_next else None,
        "previous": current.number - 1 if current.has_previous else None,
    }
