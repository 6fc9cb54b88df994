"""Reading the server name from a ClientHello (the egress proxy's check): real hellos from
OpenSSL, however they arrive, and built ones that bend one field each; for any bytes at
all, an answer and never an exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.eval.environments.client_hello import (
    MAX_HELLO_BYTES,
    MAX_RECORDS,
    ClientHello,
    Incomplete,
    Refused,
    read_client_hello,
)
from tests.support.tls_support import (
    as_records,
    built_client_hello,
    real_client_hello,
    server_name_extension,
)

HELLO = real_client_hello("pypi.org")


def refusal(stream: bytes) -> str:
    verdict = read_client_hello(stream)
    assert isinstance(verdict, Refused), verdict
    return verdict.reason


def test_a_real_hello_gives_its_server_name_and_where_it_ends():
    after = b"\x17\x03\x03\x00\x05early"  # what follows (0-RTT data) is not part of it
    assert read_client_hello(HELLO + after) == ClientHello("pypi.org", len(HELLO))


def test_every_prefix_of_a_hello_asks_for_no_more_than_the_rest():
    for cut in range(len(HELLO)):
        verdict = read_client_hello(HELLO[:cut])
        assert isinstance(verdict, Incomplete) and 0 < verdict.need <= len(HELLO) - cut, (cut, verdict)


def test_a_hello_split_over_records_is_read_whole():
    split = as_records(HELLO, 1, 3, 100)
    assert read_client_hello(split) == ClientHello("pypi.org", len(split))


def test_bytes_that_are_not_tls_are_refused_from_the_first_byte():
    assert refusal(b"G") == "not TLS: the first bytes are not a handshake record"
    assert refusal(b"\x16\x02") == "not TLS: the record's version is not 3.x"


def test_a_hello_without_a_server_name_is_refused():
    assert refusal(real_client_hello(None)) == "no server name (SNI) in the ClientHello"
    assert "no extensions" in refusal(built_client_hello(None))


def test_an_encrypted_client_hello_is_refused_even_when_its_outer_name_matches():
    hello = built_client_hello([server_name_extension(b"pypi.org"), (0xFE0D, b"\x00" * 40)])
    assert "encrypted ClientHello (ECH)" in refusal(hello)


def test_a_repeated_extension_is_refused():
    hello = built_client_hello([server_name_extension(b"pypi.org"), server_name_extension(b"evil.example")])
    assert refusal(hello) == "malformed ClientHello: extension 0 appears twice"


def test_a_server_name_list_must_hold_exactly_one_host_name():
    assert "more than one server name" in refusal(built_client_hello([server_name_extension(b"pypi.org", b"x.y")]))
    assert "not a host_name" in refusal(built_client_hello([server_name_extension(b"pypi.org", name_type=1)]))
    assert "of 0 bytes" in refusal(built_client_hello([server_name_extension(b"")]))


def test_a_server_name_that_is_not_ascii_is_refused():
    assert "not ASCII" in refusal(built_client_hello([server_name_extension("pypi.örg".encode())]))


def test_a_hello_over_the_bound_is_refused_from_its_header():
    header = b"\x16\x03\x01\x40\x00" + b"\x01" + (MAX_HELLO_BYTES + 1).to_bytes(3, "big")
    assert refusal(header + bytes(100)) == f"a ClientHello of {MAX_HELLO_BYTES + 1} bytes (at most {MAX_HELLO_BYTES})"


def test_a_hello_over_too_many_records_is_refused():
    assert (
        refusal(as_records(HELLO, *[1] * (MAX_RECORDS + 1))) == f"the ClientHello spans more than {MAX_RECORDS} records"
    )


def test_an_empty_record_or_another_record_type_inside_the_hello_is_refused():
    assert refusal(b"\x16\x03\x01\x00\x00") == "a record of 0 bytes (TLS allows 1 to 16384)"
    two = as_records(HELLO, 10)
    assert "not part of the handshake" in refusal(two[:15] + b"\x15" + two[16:])


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=600))
def test_any_bytes_get_an_answer_and_never_an_exception(stream):
    verdict = read_client_hello(stream)
    assert isinstance(verdict, Incomplete | ClientHello | Refused)
    if isinstance(verdict, ClientHello):
        assert verdict.length <= len(stream)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(HELLO) - 1), st.integers(0, 255)), max_size=6), st.integers(0, len(HELLO)))
def test_a_real_hello_with_bytes_changed_or_cut_never_raises(changes, cut):
    stream = bytearray(HELLO)
    for at, value in changes:
        stream[at] = value
    verdict = read_client_hello(bytes(stream[:cut]))
    assert isinstance(verdict, Incomplete | ClientHello | Refused)
