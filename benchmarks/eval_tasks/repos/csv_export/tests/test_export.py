import csv
import io
import unittest

from contacts.export import HEADER, Contact, export_csv

CONTACTS = [
    Contact("Lovelace, Ada", "ada@example.org", "+44 20 7946 0000", 'Prefers "Countess", not "Lady"'),
    Contact("Babbage, Charles", "charles@example.org", None, "Met at the\nRoyal Society"),
    Contact("Hopper, Grace", "grace@example.org", "+1 555 0100"),
]


class ExportTest(unittest.TestCase):
    def test_the_standard_reader_gets_the_same_fields_back(self):
        rows = list(csv.reader(io.StringIO(export_csv(CONTACTS), newline="")))
        self.assertEqual(rows[0], list(HEADER))
        self.assertEqual(
            rows[1:],
            [
                ["Babbage, Charles", "charles@example.org", "", "Met at the\nRoyal Society"],
                ["Hopper, Grace", "grace@example.org", "+1 555 0100", ""],
                ["Lovelace, Ada", "ada@example.org", "+44 20 7946 0000", 'Prefers "Countess", not "Lady"'],
            ],
        )

    def test_every_row_has_four_columns(self):
        rows = list(csv.reader(io.StringIO(export_csv(CONTACTS), newline="")))
        self.assertEqual({len(row) for row in rows}, {4})


if __name__ == "__main__":
    unittest.main()
