"""tools.encodable: text every wire and store can carry, and file names shown to the model
in a form it can give back: any name round-trips, and what is shown always encodes."""

import os

from hypothesis import given
from hypothesis import strategies as st

from tools.encodable import encodable, encodable_value, name_from_shown, shown_name

# Bytes a file name may hold (no "/" or NUL), weighted toward what could confuse the escapes.
NAME_BYTES = st.lists(
    st.sampled_from([b"\\", b"x", b"8", b"f", b"E", b"0", b"a", b"\x80", b"\xe9", b"\xff", "é".encode(), b"."]),
    max_size=12,
).map(b"".join) | st.binary(max_size=16).map(lambda b: b.replace(b"/", b"").replace(b"\0", b""))


@given(NAME_BYTES)
def test_every_file_name_round_trips_through_the_form_the_model_is_shown(raw):
    name = os.fsdecode(raw)
    assert os.fsencode(name_from_shown(shown_name(name))) == raw


@given(NAME_BYTES)
def test_a_shown_file_name_always_encodes_as_utf8(raw):
    shown_name(os.fsdecode(raw)).encode("utf-8")


def test_a_name_that_is_utf8_and_has_no_backslash_is_shown_as_it_is():
    assert shown_name("src/café.py") == "src/café.py"


def test_a_lone_surrogate_becomes_a_visible_escape_and_an_escaped_byte_its_hex():
    assert encodable("a\ud800b") == "a\\ud800b"
    assert encodable(os.fsdecode(b"caf\xe9")) == "caf\\xe9"


def test_text_that_encodes_is_the_very_same_object():
    text = "déjà vu " * 1000
    assert encodable(text) is text
    value = {"path": "a.txt", "lines": [1, "two"]}
    assert encodable_value(value) is value


def test_every_string_of_a_nested_value_is_made_encodable_keys_too():
    assert encodable_value({"k\udce9": ["\ud800", {"x": "ok"}], "n": 1}) == {"k\\xe9": ["\\ud800", {"x": "ok"}], "n": 1}
