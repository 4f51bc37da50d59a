"""The one JSON writer: bytes as every output file has them, JSON-safe values, atomic files."""

from __future__ import annotations

import pytest

from bench_pipeline.jsonio import EncodedJSON, dumps, encode_records, json_bytes, jsonable, write_atomic


def test_json_bytes_are_compact_utf8_in_insertion_order():
    assert json_bytes({"b": 1, "a": [1.5, None, "ü"]}) == b'{"b":1,"a":[1.5,null,"\xc3\xbc"]}'
    assert json_bytes(float("inf")) == b"null"


def test_an_integer_beyond_64_bits_takes_the_standard_library_with_the_same_layout():
    assert json_bytes({"x": float("nan"), "y": 10 ** 30}) == b'{"x":null,"y":1000000000000000000000000000000}'
    assert dumps({"a": 10 ** 30, "b": [1, 2]}) == b'{\n  "a": 1000000000000000000000000000000,\n  "b": [\n    1,\n    2\n  ]\n}'
    assert dumps({"a": 1, "b": [1, 2]}) == b'{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}'


def test_encode_records_writes_one_line_per_record():
    assert encode_records([{"a": 1}, {"b": "x"}]) == b'{"a":1}\n{"b":"x"}\n'
    assert encode_records([]) == b""


def test_jsonable_handles_nan_and_odd_types() -> None:
    assert jsonable({"a": float("nan"), "b": (1, 2), 3: {1}}) == {"a": None, "b": [1, 2], "3": "{1}"}


def test_jsonable_of_an_encoded_value_is_its_value():
    encoded = EncodedJSON({"n": float("-inf"), "k": [1]}, b'{"n":null,"k":[1]}')
    assert jsonable([encoded]) == [{"n": None, "k": [1]}]
    assert (encoded.value["k"], encoded.encoded) == ([1], b'{"n":null,"k":[1]}')


def test_write_atomic_writes_pieces_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "attempts.jsonl"
    write_atomic(target, [b'{"a":1}\n', b'{"a":2}\n'])
    assert target.read_bytes() == b'{"a":1}\n{"a":2}\n'
    write_atomic(target, b"replaced\n")
    assert target.read_bytes() == b"replaced\n"
    assert [p.name for p in tmp_path.iterdir()] == ["attempts.jsonl"]
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "no-such-folder" / "attempts.jsonl", [b"x"])

    def pieces():  # made as they are written; making the third fails
        yield b"new 1\n"
        yield b"new 2\n"
        raise RuntimeError("payload refused")

    with pytest.raises(RuntimeError, match="payload refused"):
        write_atomic(target, pieces())
    assert target.read_bytes() == b"replaced\n"  # as it was
    assert [p.name for p in tmp_path.iterdir()] == ["attempts.jsonl"]  # no temporary file left


def test_loads_json_reads_what_json_bytes_wrote_integers_beyond_64_bits_included():
    from bench_pipeline.artifacts import loads_json

    value = {"runs": {"r1": {"data_version": "abc@v1"}}, "tokens": 2 ** 70, "rate": 0.25, "none": None}
    assert loads_json(json_bytes(value)) == value
    assert loads_json(b'{"n": 18446744073709551616}') == {"n": 2 ** 64}
    with pytest.raises(ValueError):
        loads_json(b'{"n": ')


def test_a_file_whose_name_is_near_the_limit_is_written_through_a_shorter_temporary_name(tmp_path):
    """A 250-byte name plus a dot and a .tmp-<pid> suffix would pass 255 bytes."""
    target = tmp_path / ("r" * 242 + ".parquet")
    write_atomic(target, b"data")
    assert target.read_bytes() == b"data" and [p.name for p in tmp_path.iterdir()] == [target.name]
