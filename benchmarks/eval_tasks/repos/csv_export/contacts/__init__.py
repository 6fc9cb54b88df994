"""The address book and its CSV export."""

from contacts.csvfile import escape_field, format_row
from contacts.export import Contact, export_csv

__all__ = ["Contact", "escape_field", "export_csv", "format_row"]
