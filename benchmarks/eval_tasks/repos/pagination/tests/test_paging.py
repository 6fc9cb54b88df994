import unittest

from shelf.paging import PageOutOfRange, page_count, paginate


class PageCountTest(unittest.TestCase):
    def test_an_empty_listing_has_one_page(self):
        self.assertEqual(page_count(0, 10), 1)

    def test_exact_multiple(self):
        self.assertEqual(page_count(20, 10), 2)

    def test_a_partial_last_page_counts(self):
        self.assertEqual(page_count(21, 10), 3)
        self.assertEqual(page_count(5, 10), 1)


class PaginateTest(unittest.TestCase):
    def test_pages_are_one_based(self):
        page = paginate(list(range(25)), 1, 10)
        self.assertEqual(page.items, list(range(10)))
        self.assertFalse(page.has_previous)

    def test_the_last_page_holds_the_remainder(self):
        page = paginate(list(range(25)), 3, 10)
        self.assertEqual(page.items, [20, 21, 22, 23, 24])
        self.assertFalse(page.has_next)

    def test_a_middle_page_links_both_ways(self):
        page = paginate(list(range(25)), 2, 10)
        self.assertTrue(page.has_next)
        self.assertTrue(page.has_previous)

    def test_past_the_last_page(self):
        with self.assertRaises(PageOutOfRange):
            paginate(list(range(25)), 4, 10)

    def test_per_page_is_bounded(self):
        with self.assertRaises(ValueError):
            paginate([1, 2, 3], 1, 0)


if __name__ == "__main__":
    unittest.main()
