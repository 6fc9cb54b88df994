import unittest

from shelf.catalog import Book, list_books

BOOKS = [Book(f"Title {n:02d}", "Le Guin" if n % 3 else "Tolkien", 1960 + n) for n in range(45)]


class ListBooksTest(unittest.TestCase):
    def test_first_page(self):
        body = list_books(BOOKS)
        self.assertEqual(len(body["items"]), 20)
        self.assertEqual(body["items"][0]["title"], "Title 00")
        self.assertEqual((body["page"], body["pages"], body["total"]), (1, 3, 45))
        self.assertEqual((body["previous"], body["next"]), (None, 2))

    def test_last_page_has_the_last_five_books(self):
        body = list_books(BOOKS, page=3)
        self.assertEqual([b["title"] for b in body["items"]], [f"Title {n}" for n in range(40, 45)])
        self.assertIsNone(body["next"])

    def test_author_filter_is_case_insensitive(self):
        body = list_books(BOOKS, author="tolkien", per_page=10)
        self.assertEqual(body["total"], 15)
        self.assertEqual(body["pages"], 2)
        self.assertEqual(len(list_books(BOOKS, author="tolkien", page=2, per_page=10)["items"]), 5)


if __name__ == "__main__":
    unittest.main()
