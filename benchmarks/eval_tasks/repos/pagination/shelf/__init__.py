"""Listing helpers for the book catalogue API."""

from shelf.catalog import Book, list_books
from shelf.paging import Page, PageOutOfRange, page_count, paginate

__all__ = ["Book", "Page", "PageOutOfRange", "list_books", "page_count", "paginate"]
