import unittest

from till.formatting import format_money
from till.receipt import Receipt


class FormatMoneyTest(unittest.TestCase):
    def test_thousands_and_cents(self):
        self.assertEqual(format_money(1234.5), "$1,234.50")

    def test_negative(self):
        self.assertEqual(format_money(-3.1), "-$3.10")

    def test_rounds_the_half_cent_up(self):
        self.assertEqual(format_money(2.135), "$2.14")
        self.assertEqual(format_money(1.005, "EUR"), "€1.01")


class ReceiptTest(unittest.TestCase):
    def test_total_with_tax(self):
        receipt = Receipt(tax_rate=8.25)
        receipt.add("Notebook", 4.99, 3)
        receipt.add("Pen", 1.25, 2)
        self.assertEqual((receipt.subtotal, receipt.tax, receipt.total), (1747, 144, 1891))
        self.assertTrue(receipt.render().endswith("Total: $18.91"))


if __name__ == "__main__":
    unittest.main()
