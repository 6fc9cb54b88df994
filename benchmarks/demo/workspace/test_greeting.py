from greeting import greet


def test_greet():
    assert greet("Ada") == "Hello, Ada!"


if __name__ == "__main__":
    test_greet()
    print("1 passed")
