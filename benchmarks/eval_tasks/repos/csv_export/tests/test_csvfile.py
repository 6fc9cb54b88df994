import unittest

from contacts.csvfile import escape_field, format_row


class EscapeFieldTest(unittest.TestCase):
    def test_plain_text_is_left_alone(self):
        self.assertEqual(escape_field("Ada"), "Ada")
        self.assertEqual(escape_field(42), "42")
        self.assertEqual(escape_field(None), "")

    def test_a_comma_is_quoted(self):
        self.assertEqual(escape_field("Lovelace, Ada"), '"Lovelace, Ada"')

    def test_a_quote_is_doubled(self):
        self.assertEqual(escape_field('the "Enchantress"'), '"the ""Enchantress"""')

    def test_a_line_break_is_quoted(self):
        self.assertEqual(escape_field("line 1\nline 2"), '"line 1\nline 2"')


class FormatRowTest(unittest.TestCase):
    def test_crlf(self):
        self.assertEqual(format_row(["a", "b", None]), "a,b,\r\n")


if __name__ == "__main__":
    unittest.main()
